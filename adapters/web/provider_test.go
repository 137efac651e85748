package web_test

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/totpgen"
)

const appLocation = "https://app.example/cb?code=c0de&state=s%26t&iss=http%3A%2F%2Flocalhost"

// signInPathOf is the sign-in page the flow sent the browser to.
var hiddenClient = regexp.MustCompile(`name="client" value="([^"]+)"`)

func consentPrompt() *application.ConsentPrompt {
	return &application.ConsentPrompt{RequestID: requestID,
		Client: domain.OAuthClient{ID: "0123456789abcdef01234567", Name: "Grafana <Ops>"},
		Scopes: domain.OAuthScopes, User: domain.User{Email: "ada@example.com"}}
}

func TestContinue_sends_a_signed_out_browser_to_sign_in_and_back(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	f.step = application.AuthorizeStep{SignIn: true, ClientName: "Grafana <Ops>"}
	v := e.visitor()

	res := v.get(continuePath)
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.Status != http.StatusSeeOther || err != nil || loc.Path != "/account/login" || loc.Query().Get("next") != continuePath {
		t.Fatalf("%d to %q", res.Status, res.Header.Get("Location"))
	}
	if b := f.lastContinue(t); b.id != requestID || b.browser != nil {
		t.Errorf("Continue(%q, %+v)", b.id, b.browser)
	}
	form := v.get(loc.RequestURI())
	wantPage(t, form, http.StatusOK, "Sign in")
	if !strings.Contains(form.Body, "Sign in to continue to <strong>Grafana &lt;Ops&gt;</strong>.") {
		t.Errorf("the page does not name the app:\n%s", form.Body)
	}
	// The app's name comes sealed for this request: another request's,
	// or one made up, names nothing.
	other := url.Values{"next": {web.AuthorizeContinuePath + "?request=" + strings.Repeat("x", 43)}, "client": {loc.Query().Get("client")}}
	made := url.Values{"next": {continuePath}, "client": {"R3JhZmFuYQ"}}
	for _, q := range []url.Values{other, made} {
		if body := v.get("/account/login?" + q.Encode()).Body; strings.Contains(body, "continue to") {
			t.Errorf("%v names an app", q)
		}
	}
	// A wrong password keeps the name; the right one goes on in the flow
	// with the new session, and, the app being another origin, by a page
	// that goes on by itself rather than a redirect after the POST.
	bad := v.post("/account/login", url.Values{"email": {"ada@example.com"}, "password": {"wrong-password-1"},
		"next": {continuePath}, "client": {hiddenClient.FindStringSubmatch(form.Body)[1]}})
	if bad.Status != http.StatusUnauthorized || !strings.Contains(bad.Body, "continue to <strong>Grafana") {
		t.Errorf("the refused sign-in: %d\n%s", bad.Status, bad.Body)
	}
	f.step = application.AuthorizeStep{Location: appLocation, ClientName: "Grafana <Ops>"}
	done := v.post("/account/login", url.Values{"email": {"ada@example.com"}, "password": {custPassword}, "next": {continuePath}})
	wantPage(t, done, http.StatusOK, "Continue to Grafana &lt;Ops&gt;")
	wantOnwardPage(t, done, appLocation)
	if b := f.lastContinue(t).browser; b == nil || b.SessionID == "" || v.sso == nil || v.cookie == nil {
		t.Errorf("the flow went on without the new session: %+v", b)
	}
}

// wantOnwardPage checks a page that goes on to location by itself: meta
// refresh at once, and a link.
func wantOnwardPage(t testing.TB, a answer, location string) {
	t.Helper()
	esc := html.EscapeString(location)
	if !strings.Contains(a.Body, `<meta http-equiv="refresh" content="0; url=`+esc+`">`) {
		t.Errorf("no meta refresh to %s:\n%s", location, a.Body)
	}
	if !strings.Contains(a.Body, `href="`+esc+`"`) {
		t.Errorf("no link to %s:\n%s", location, a.Body)
	}
	if a.Header.Get("Location") != "" {
		t.Errorf("a redirect after a POST: %s", a.Header.Get("Location"))
	}
}

func TestContinue_answers_each_step(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()

	f.step = application.AuthorizeStep{Location: appLocation}
	wantRedirect(t, e.get(continuePath), appLocation)

	f.step = application.AuthorizeStep{Consent: consentPrompt()}
	res := e.get(continuePath)
	wantPage(t, res, http.StatusOK, "Allow Grafana &lt;Ops&gt; to use your account?")
	for _, want := range []string{`action="/oauth2/consent"`, `name="request" value="` + requestID + `"`,
		`value="allow"`, `value="deny"`, "ada@example.com",
		"That you are signed in, and your user id", "Your name", "Your email address, and whether it is verified",
		"Your roles", "Keep access when you are not using the app"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the consent page lacks %s", want)
		}
	}

	f.step, f.stepErr = application.AuthorizeStep{}, domain.ErrAuthRequestNotFound
	res = e.get(continuePath)
	wantPage(t, res, http.StatusBadRequest, "This sign-in request has expired or was used")
	if !strings.Contains(res.Body, "Go back to the app and start again.") {
		t.Error("the page does not say to start again")
	}
	f.stepErr = &domain.OAuthError{Code: domain.OAuthInvalidRequest, Description: "the <client> is gone"}
	res = e.get(continuePath)
	wantPage(t, res, http.StatusBadRequest, "This request cannot go on")
	if !strings.Contains(res.Body, "the &lt;client&gt; is gone") {
		t.Error("the page does not give the description")
	}
	f.stepErr = errors.New("the store broke: secret detail")
	res = e.get(continuePath)
	wantPage(t, res, http.StatusInternalServerError, "Something went wrong")
	if strings.Contains(res.Body, "secret detail") {
		t.Error("the page shows the error's text")
	}
	f.stepErr = domain.ErrUnavailable
	wantPage(t, e.get(continuePath), http.StatusServiceUnavailable, "The service is unavailable")

	// An id that cannot be one never reaches the provider.
	calls := len(f.continued)
	for _, q := range []string{"", "?request=", "?request=short", "?request=" + strings.Repeat("a", 129), "?request=" + url.QueryEscape(requestID+"/")} {
		wantPage(t, e.get(web.AuthorizeContinuePath+q), http.StatusBadRequest, "This sign-in request has expired or was used")
	}
	if len(f.continued) != calls {
		t.Error("a malformed id reached the provider")
	}
}

func TestConsent_allow_and_deny(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	u := e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	f.consent = application.AuthorizeStep{Location: appLocation, ClientName: "Grafana"}

	for _, decision := range []string{"allow", "deny"} {
		res := v.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {decision}})
		wantPage(t, res, http.StatusOK, "Continue to Grafana")
		wantOnwardPage(t, res, appLocation)
		c := f.consented[len(f.consented)-1]
		if c.id != requestID || c.allow != (decision == "allow") || c.browser.UserID != u.ID || c.browser.SessionID == "" {
			t.Errorf("%s: Consent(%+v)", decision, c)
		}
	}
	// A browser without the session goes back through the flow; a form
	// from another site is refused; an expired request says so.
	calls := len(f.consented)
	wantRedirect(t, e.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {"allow"}}), continuePath)
	wantPage(t, v.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {"allow"}},
		withHeader("Sec-Fetch-Site", "cross-site")), http.StatusForbidden, "This form came from another site")
	if len(f.consented) != calls {
		t.Error("the provider heard a consent without a session, or from another site")
	}
	f.stepErr = domain.ErrAuthRequestNotFound
	wantPage(t, v.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {"allow"}}),
		http.StatusBadRequest, "This sign-in request has expired or was used")
}

func TestServeProviderError_is_a_page_with_the_headers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pages, _ := e.pages.(*web.Pages)
	rec := recordAnswer(t, func(w http.ResponseWriter, r *http.Request) {
		pages.ServeProviderError(w, r, http.StatusBadRequest, "The app is not registered <here>.")
	})
	checkPageHeaders(t, "ServeProviderError", rec)
	wantPage(t, rec, http.StatusBadRequest, "This sign-in cannot go on")
	if !strings.Contains(rec.Body, "The app is not registered &lt;here&gt;.") {
		t.Errorf("the message:\n%s", rec.Body)
	}
}

func TestConsent_goes_on_to_a_native_apps_scheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	// A private-use scheme is a redirect URI a public client may register:
	// the link is kept (html/template would make it "#ZgotmplZ").
	f.consent = application.AuthorizeStep{Location: "com.example.app:/cb?code=x&state=y", ClientName: "App"}
	wantOnwardPage(t, v.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {"allow"}}),
		"com.example.app:/cb?code=x&state=y")
	// A scheme without a dot is never linked, whatever the provider said.
	f.consent = application.AuthorizeStep{Location: "javascript:alert(1)", ClientName: "App"}
	if res := v.post(web.ConsentPath, url.Values{"request": {requestID}, "decision": {"allow"}}); strings.Contains(res.Body, "javascript:") &&
		(strings.Contains(res.Body, `href="javascript`) || strings.Contains(res.Body, "refresh")) {
		t.Errorf("a javascript: link:\n%s", res.Body)
	}
}

func TestContinue_through_the_second_step_keeps_the_app(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	secret := e.enrolTOTP("ada@example.com")
	f.step = application.AuthorizeStep{SignIn: true, ClientName: "Grafana"}
	v := e.visitor()
	form := v.get(v.get(continuePath).Header.Get("Location"))
	client := hiddenClient.FindStringSubmatch(form.Body)[1]

	step := v.post("/account/login", url.Values{"email": {"ada@example.com"}, "password": {custPassword},
		"next": {continuePath}, "client": {client}})
	wantPage(t, step, http.StatusOK, "Confirm it is you")
	if !strings.Contains(step.Body, "continue to <strong>Grafana</strong>") || !strings.Contains(step.Body, `name="client" value="`+client+`"`) ||
		!strings.Contains(step.Body, `href="/account/login?client=`) {
		t.Errorf("the second step does not carry the app:\n%s", step.Body)
	}
	token := hiddenMFAToken.FindStringSubmatch(step.Body)[1]
	wrong := v.post("/account/login/code", url.Values{"mfaToken": {token}, "code": {"000000"}, "next": {continuePath},
		"client": {client}, "methods": {"totp"}})
	if wrong.Status != http.StatusUnauthorized || !strings.Contains(wrong.Body, "continue to <strong>Grafana</strong>") {
		t.Errorf("a wrong code: %d\n%s", wrong.Status, wrong.Body)
	}
	f.step = application.AuthorizeStep{Location: appLocation, ClientName: "Grafana"}
	e.clock.Advance(30 * time.Second)
	done := v.post("/account/login/code", url.Values{"mfaToken": {token}, "code": {totpgen.MustCode(t, secret, e.clock.Now())},
		"next": {continuePath}, "client": {client}})
	wantOnwardPage(t, done, appLocation)
}
