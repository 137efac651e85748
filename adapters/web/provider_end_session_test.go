package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

const logoutLocation = "https://app.example/signed-out?state=st8"

func TestEndSession_without_a_hint_asks_first(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	before := *v

	q := url.Values{"client_id": {"0123456789abcdef01234567"}, "post_logout_redirect_uri": {"https://app.example/signed-out"},
		"state": {"st8"}}
	res := v.get(web.EndSessionPath + "?" + q.Encode())
	wantPage(t, res, http.StatusOK, "Sign out?")
	for _, want := range []string{`action="/oauth2/end_session"`, `name="client_id" value="0123456789abcdef01234567"`,
		`name="post_logout_redirect_uri" value="https://app.example/signed-out"`, `name="state" value="st8"`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the confirmation lacks %s", want)
		}
	}
	// An app's own POST comes from another site, without the cookies:
	// the same question.
	res = e.post(web.EndSessionPath, q, withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://app.example"))
	wantPage(t, res, http.StatusOK, "Sign out?")
	if len(f.ended) != 0 || !e.canUseSession(&before) {
		t.Fatal("asking ended something")
	}

	// The button: the provider is told, with the browser's session; both
	// cookies go, the session ends, and the app is reached by a page that
	// goes on by itself (after a POST).
	f.endRes = application.EndSessionResult{Location: logoutLocation, ClientName: "Grafana"}
	res = v.post(web.EndSessionPath, q)
	wantPage(t, res, http.StatusOK, "You are signed out")
	wantOnwardPage(t, res, logoutLocation)
	in := f.ended[0]
	if in.ClientID != q.Get("client_id") || in.PostLogoutRedirectURI != q.Get("post_logout_redirect_uri") || in.State != "st8" ||
		in.Browser == nil || in.Browser.UserID != e.user("ada@example.com").ID {
		t.Errorf("EndSession(%+v)", in)
	}
	wantCleared(t, res, web.ConsoleCookie)
	wantCleared(t, res, web.SSOCookie)
	if e.canUseSession(&before) {
		t.Error("the console session lives on")
	}
}

func TestEndSession_with_a_hint_ends_at_once(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	before := *v
	f.endRes = application.EndSessionResult{Location: logoutLocation}
	res := v.get(web.EndSessionPath + "?id_token_hint=eyJhbGciOi.x.y&state=st8")
	wantRedirect(t, res, logoutLocation)
	wantCleared(t, res, web.ConsoleCookie)
	wantCleared(t, res, web.SSOCookie)
	if f.ended[0].IDTokenHint != "eyJhbGciOi.x.y" || f.ended[0].Browser == nil || e.canUseSession(&before) {
		t.Errorf("EndSession(%+v), or the session lives on", f.ended[0])
	}

	// Without a way back: the signed-out page, naming the app.
	f.endRes = application.EndSessionResult{ClientName: "Grafana <Ops>"}
	res = e.get(web.EndSessionPath + "?id_token_hint=h")
	wantPage(t, res, http.StatusOK, "You are signed out")
	if !strings.Contains(res.Body, "go back to Grafana &lt;Ops&gt;.") {
		t.Errorf("the page does not name the app:\n%s", res.Body)
	}

	// A refusal ends nothing and says why.
	w := e.visitor()
	w.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	f.endErr = &domain.OAuthError{Code: domain.OAuthInvalidRequest, Description: "post_logout_redirect_uri is not registered"}
	res = w.get(web.EndSessionPath + "?id_token_hint=h&post_logout_redirect_uri=https://evil.example/")
	wantPage(t, res, http.StatusBadRequest, "This request cannot go on")
	if !strings.Contains(res.Body, "post_logout_redirect_uri is not registered") || res.Header.Get("Location") != "" {
		t.Errorf("the refusal:\n%s", res.Body)
	}
	if !e.canUseSession(w) {
		t.Error("a refused end_session ended the session")
	}
}

func TestNext_admits_the_flow_and_nothing_else_outside_the_area(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("root@example.com", true)
	f.step = application.AuthorizeStep{Location: appLocation}

	// The flow's page, exactly: the sign-in goes on in it.
	v := e.visitor()
	res := v.post("/account/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}, "next": {continuePath}})
	wantOnwardPage(t, res, appLocation)

	// Anything near it goes to the area's home; and the admin area's
	// sign-in never leaves the admin area.
	for _, next := range []string{
		web.AuthorizeContinuePath, web.AuthorizeContinuePath + "?request=", web.AuthorizeContinuePath + "?request=short",
		continuePath + "&next=https://evil.example/", continuePath + "#x", continuePath + "/", continuePath + "%2f..",
		web.AuthorizeContinuePath + "?x=1&request=" + requestID, web.AuthorizeContinuePath + "/?request=" + requestID,
		web.AuthorizeContinuePath + "?request=" + requestID + "%0d%0aSet-Cookie:x", web.AuthorizeContinuePath + "?Request=" + requestID,
		"/oauth2/authorize/continue/../../admin/?request=" + requestID, "/oauth2/authorize?request=" + requestID,
		"/oauth2/consent", "/oauth2/end_session", "//evil.example" + continuePath, "https://evil.example" + continuePath,
		"/%2e%2e" + continuePath, "\\" + continuePath, " " + continuePath,
	} {
		v := e.visitor()
		res := v.post("/account/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}, "next": {next}})
		wantRedirect(t, res, "/account/")
	}
	v = e.visitor()
	res = v.post("/admin/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}, "next": {continuePath}})
	wantRedirect(t, res, "/admin/")

	// Signed in already, the sign-in page of a flow still asks: the
	// provider sends a browser there to sign in again (prompt=login).
	wantPage(t, v.get("/account/login?next="+url.QueryEscape(continuePath)), http.StatusOK, "Sign in")
}
