package web_test

import (
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/chromium"
)

// appServer is an app of another origin: its pages say where the
// browser landed, except /stay, which answers 204 No Content: a browser
// sent there stays on the page that sent it, so that the page can be
// checked.
func appServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stay" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.URL.Path == "/start" {
			// The app's link to the provider, as a cross-site navigation.
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><title>App</title></head><body>`+
				`<a id="start" href="`+html.EscapeString(r.URL.Query().Get("to"))+`">Sign in with userd</a></body></html>`)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><title>App</title></head><body><h1 id="app-landed">App callback</h1></body></html>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// pagesServer serves the env's pages in the API's router on
// http://localhost:<port>, an origin whose Secure cookies Chromium keeps
// without TLS.
func pagesServer(t *testing.T, e *env) string {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(e.svc, httpapi.Options{Logger: e.log, Pages: e.pages}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
}

// wantLanded waits until the browser shows the app's page, and checks
// its address.
func wantLanded(t *testing.T, b *chromium.Browser, url string) {
	t.Helper()
	b.WaitText(t, "#app-landed")
	if got := b.Eval(t, "location.href"); got != url {
		t.Errorf("the browser is at %s, want %s", got, url)
	}
}

// TestProviderPages_in_chromium goes through an app's sign-in as a
// person does, the provider played by a fake: the sign-in page that
// names the app, the consent page, and the way back to the app after a
// POST, which the pages' form-action 'self' would refuse as a redirect:
// the page that goes on by meta refresh reaches the other origin. Then
// the end of the session asked by an app, and the page of an expired
// request. Each page passes CheckPage (axe-core in the four looks, the
// screenshots of docs/oidc.md).
func TestProviderPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	origin := pagesServer(t, e)
	app := appServer(t)

	f.step = application.AuthorizeStep{SignIn: true, ClientName: "Grafana"}
	b.Open(t, origin+continuePath, http.StatusOK)
	b.WantHeading(t, "Sign in")
	if got := b.Text(t, "#continue-to"); got != "Sign in to continue to Grafana." {
		t.Errorf("the sign-in page says %q", got)
	}
	b.CheckPage(t, "oidc-sign-in")

	prompt := consentPrompt()
	prompt.Client.Name = "Grafana"
	f.step = application.AuthorizeStep{Consent: prompt}
	b.Do(t, chromedp.SendKeys("#email", "ada@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Allow Grafana to use your account?")
	b.CheckPage(t, "oidc-consent")

	// Allow: the page that goes on to the app (checked while the app
	// answers 204, which leaves it shown), then the same with an app
	// that answers: the browser lands there, though the way began with
	// a POST and the pages say form-action 'self'.
	f.consent = application.AuthorizeStep{Location: app.URL + "/stay?code=c0de&state=xyz", ClientName: "Grafana"}
	b.Submit(t, chromedp.Click("#consent-allow"), http.StatusOK)
	b.WantHeading(t, "Continue to Grafana")
	b.CheckPage(t, "oidc-continue")
	b.Open(t, origin+continuePath, http.StatusOK)
	b.WantHeading(t, "Allow Grafana to use your account?")
	landing := app.URL + "/cb?code=c0de&state=xyz"
	f.consent = application.AuthorizeStep{Location: landing, ClientName: "Grafana"}
	b.Submit(t, chromedp.Click("#consent-allow"), http.StatusOK)
	wantLanded(t, b, landing)
	if c := f.consented[len(f.consented)-1]; !c.allow || c.browser.SessionID == "" {
		t.Errorf("Consent(%+v)", c)
	}

	// A sign-in posted in a flow whose next step is the app: the app is
	// reached, not refused by form-action.
	back := app.URL + "/cb?code=c0de2&state=abc"
	f.step = application.AuthorizeStep{SignIn: true, ClientName: "Grafana"}
	b.Open(t, origin+continuePath, http.StatusOK)
	f.step = application.AuthorizeStep{Location: back, ClientName: "Grafana"}
	b.Do(t, chromedp.SendKeys("#email", "ada@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	wantLanded(t, b, back)

	// The app's link, from another site (127.0.0.1 is not localhost's
	// site): the browser sends the provider's Lax cookie with it, and the
	// flow knows the browser's session.
	b.Open(t, app.URL+"/start?to="+url.QueryEscape(origin+continuePath), http.StatusOK)
	b.Submit(t, chromedp.Click("#start"), http.StatusOK)
	wantLanded(t, b, back)
	if c := f.lastContinue(t); c.browser == nil || c.browser.SessionID == "" {
		t.Errorf("the app's cross-site link reached the flow without the browser's session: %+v", c.browser)
	}

	// The app asks to end the session, without a hint: the question,
	// then the signed-out page.
	b.Open(t, origin+"/oauth2/end_session?client_id=0123456789abcdef01234567&state=s", http.StatusOK)
	b.WantHeading(t, "Sign out?")
	b.CheckPage(t, "oidc-end-session")
	f.endRes = application.EndSessionResult{ClientName: "Grafana"}
	b.Submit(t, chromedp.Click("#end-session"), http.StatusOK)
	b.WantHeading(t, "You are signed out")
	b.CheckPage(t, "oidc-signed-out")
	if in := f.ended[len(f.ended)-1]; in.Browser == nil || in.State != "s" {
		t.Errorf("EndSession(%+v)", in)
	}
	b.Open(t, origin+"/account/", http.StatusOK)
	b.WantHeading(t, "Sign in")

	f.step, f.stepErr = application.AuthorizeStep{}, domain.ErrAuthRequestNotFound
	b.Open(t, origin+continuePath, http.StatusBadRequest)
	b.WantHeading(t, "This sign-in request has expired or was used")
	b.CheckPage(t, "oidc-request-expired")
	b.CheckConsole(t)
}

// TestClientsAndApps_in_chromium: an admin registers a client in the
// console (a refusal first, at its field), sees its secret once, and
// looks at the apps with access on the account page; each page passes
// CheckPage.
func TestClientsAndApps_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("root@example.com", true)
	origin := pagesServer(t, e)

	b.Open(t, origin+"/admin/clients", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", "root@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Clients")

	// A redirect URI with a fragment: refused beside its field.
	b.Do(t, chromedp.SendKeys("#name", "Grafana"),
		chromedp.SendKeys("#redirectUris", "https://grafana.example.com/login/generic_oauth#x"))
	b.Submit(t, chromedp.Click("#create-client"), http.StatusBadRequest)
	if msg := b.Text(t, "#redirectUris-error"); !strings.Contains(msg, "The redirect URIs entry 1") {
		t.Errorf("the field's error reads %q", msg)
	}
	b.CheckPage(t, "admin-clients-error")
	b.Do(t, chromedp.SetValue("#redirectUris", "https://grafana.example.com/login/generic_oauth\nhttp://127.0.0.1/cb"),
		chromedp.SetValue("#postLogoutRedirectUris", "https://grafana.example.com/"))
	b.Submit(t, chromedp.Click("#create-client"), http.StatusOK)
	b.WantHeading(t, "Grafana")
	if secret := b.Eval(t, `document.getElementById("client-secret").value`); len(secret) != 43 {
		t.Errorf("the secret shown: %q", secret)
	}
	b.CheckPage(t, "admin-client-created")
	b.Open(t, origin+"/admin/clients", http.StatusOK)
	b.CheckPage(t, "admin-clients")

	granted := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	f.grants = []application.AppAccess{
		{ClientID: "0123456789abcdef01234567", ClientName: "Grafana", GrantedAt: granted,
			Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeProfile, domain.ScopeEmail}},
		{ClientID: "89abcdef0123456789abcdef", ClientName: "Team wiki", GrantedAt: granted.Add(26 * time.Hour),
			Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeOfflineAccess}},
	}
	b.Open(t, origin+"/account/apps", http.StatusOK)
	b.WantHeading(t, "Apps with access")
	b.CheckPage(t, "account-apps")
	b.Submit(t, chromedp.Click("#revoke-89abcdef0123456789abcdef"), http.StatusOK)
	if got := b.Text(t, ".notice"); !strings.Contains(got, "access is removed") {
		t.Errorf("the notice reads %q", got)
	}
	b.CheckConsole(t)
}

// TestFormAction_refuses_a_redirect_after_a_post_in_chromium shows why
// the pages answer a POST that ends at an app with a page that goes on
// by itself: under form-action 'self', Chromium refuses a 303 to another
// origin that follows a form's POST (CSP 3 applies form-action to the
// redirects of a submission). The same page's meta refresh gets there
// (TestProviderPages_in_chromium).
func TestFormAction_refuses_a_redirect_after_a_post_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	app := appServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'")
		if r.Method == http.MethodPost {
			http.Redirect(w, r, app.URL+"/cb", http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><title>Form</title></head><body>`+
			`<form method="post" action="/"><button id="go" type="submit">Go</button></form></body></html>`)
	}))
	t.Cleanup(srv.Close)
	b.Open(t, srv.URL+"/", http.StatusOK)
	b.Do(t, chromedp.Click("#go"), chromedp.Sleep(time.Second))
	if got := b.Eval(t, "location.href"); strings.HasPrefix(got, app.URL) {
		t.Errorf("the redirect after the POST reached the app (%s): the pages could redirect after all", got)
	}
}
