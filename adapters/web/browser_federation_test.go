package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/chromium"
)

// fakeIDP plays an identity provider for a real browser: its
// authorization endpoint approves at once, as the person it is told to
// be, and sends the browser back to the pages' callback. It is another
// site than the pages' (127.0.0.1 against localhost), as a provider is.
type fakeIDP struct {
	mu       sync.Mutex
	identity domain.ExternalIdentity
}

func (f *fakeIDP) signInAs(id domain.ExternalIdentity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.identity = id
}

func startFakeIDP(t *testing.T, e *env, origin string) *fakeIDP {
	t.Helper()
	f := &fakeIDP{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slug, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/authorize")
		if !ok {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		id := f.identity
		f.mu.Unlock()
		code, state := e.upstream.Approve(srv.URL+r.URL.RequestURI(), id)
		//nolint:gosec // G710: the test's own pages server, the provider's redirect URI
		http.Redirect(w, r, origin+"/auth/idp/"+slug+"/callback?"+url.Values{"code": {code}, "state": {state}}.Encode(),
			http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	e.upstream.SetAuthorizeBase(srv.URL)
	return f
}

// waitPath waits until the browser is at path (a page's meta refresh
// has moved it on).
func waitPath(t *testing.T, b *chromium.Browser, path string) {
	t.Helper()
	deadline := time.Now().Add(chromium.StepTimeout)
	for {
		got := b.Eval(t, "location.pathname + location.search")
		if got == path {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser is at %s, want %s", got, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFederationPages_in_chromium goes through sign-ins with another
// identity provider as a person does, the provider played by a server
// of the test: the sign-in page's button; a first sign-in that makes the
// account and lands on the account page through the callback's
// same-site step (the session's Strict cookie must go with it); the
// account with the provider's email, which asks for its own sign-in and
// links the identity then; and a refusal's page. Each page passes
// CheckPage (axe-core in the four looks, the screenshots of
// docs/providers.md).
func TestFederationPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	admin := e.addUser("root@example.com", true)
	str := func(s string) *string { return &s }
	_, err := e.svc.IdentityProviders.CreateIdentityProvider(context.Background(),
		&domain.Principal{UserID: admin.ID, Profiles: admin.Profiles},
		domain.IdentityProviderInput{Slug: str("acme"), DisplayName: str("Acme SSO"), Kind: str("oidc"),
			Issuer: str("https://login.acme.example"), ClientID: str("userd"), ClientSecret: str("provider-secret")})
	if err != nil {
		t.Fatal(err)
	}
	grace := e.addUser("grace@example.com", false)
	origin := pagesServer(t, e)
	idp := startFakeIDP(t, e, origin)

	b.Open(t, origin+"/account/login", http.StatusOK)
	b.WantHeading(t, "Sign in")
	if got := b.Text(t, `a[data-idp="acme"]`); got != "Sign in with Acme SSO" {
		t.Errorf("the provider's button reads %q", got)
	}
	b.CheckPage(t, "idp-sign-in")

	// A newcomer: the account is made, and the browser lands signed in.
	idp.signInAs(domain.ExternalIdentity{Subject: "s-ada", Email: "newcomer@example.com", EmailVerified: true, Name: "Newcomer"})
	b.Submit(t, chromedp.Click(`a[data-idp="acme"]`), http.StatusOK)
	waitPath(t, b, "/account/")
	b.WantHeading(t, "My account")
	if got := b.Text(t, "main"); !strings.Contains(got, "newcomer@example.com") {
		t.Errorf("the account page shows %q", got)
	}
	b.Submit(t, chromedp.Click(`form[action="/account/logout"] button`), http.StatusOK)

	// The provider vouches for grace's email: her account is not signed
	// in by it, but asks for her own sign-in, which links it.
	idp.signInAs(domain.ExternalIdentity{Subject: "s-grace", Email: "grace@example.com", EmailVerified: true})
	b.Open(t, origin+"/account/login", http.StatusOK)
	b.Submit(t, chromedp.Click(`a[data-idp="acme"]`), http.StatusOK)
	b.WantHeading(t, "Sign in")
	if got := b.Text(t, "#link-pending"); !strings.Contains(got, "grace@example.com") || !strings.Contains(got, "Acme SSO") {
		t.Errorf("the pending link reads %q", got)
	}
	if got := b.Eval(t, `document.getElementById("email").value`); got != "grace@example.com" {
		t.Errorf("the email field holds %q", got)
	}
	b.CheckPage(t, "idp-link-pending")
	b.Do(t, chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	waitPath(t, b, "/account/identities?done=identity-linked&provider=acme")
	b.WantHeading(t, "Linked accounts")
	if got := b.Text(t, "main"); !strings.Contains(got, "Your Acme SSO account is linked.") {
		t.Errorf("the page after the link reads %q", got)
	}
	ids, err := e.svc.Federation.Identities(context.Background(),
		&domain.Principal{UserID: grace.ID, Profiles: grace.Profiles}, grace.ID.String())
	if err != nil || len(ids) != 1 || ids[0].Subject != "s-grace" {
		t.Errorf("grace's identities = %+v, %v", ids, err)
	}
	b.Submit(t, chromedp.Click(`form[action="/account/logout"] button`), http.StatusOK)

	// The provider does not vouch for the email of an unknown person.
	idp.signInAs(domain.ExternalIdentity{Subject: "s-who", Email: "who@example.com"})
	b.Open(t, origin+"/account/login", http.StatusOK)
	b.Submit(t, chromedp.Click(`a[data-idp="acme"]`), http.StatusForbidden)
	b.WantHeading(t, "Your email address is not verified")
	b.CheckPage(t, "idp-refused")
	b.CheckConsole(t)
}
