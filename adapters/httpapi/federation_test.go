package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// idpCookie is the flow's cookie that res sets, as the browser sends it
// back.
func idpCookie(t *testing.T, res response) reqOption {
	t.Helper()
	for _, c := range (&http.Response{Header: res.Header}).Cookies() {
		if c.Name == "__Host-userd_idp" && c.Value != "" {
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.MaxAge != 600 {
				t.Errorf("flow cookie %+v: want Secure, HttpOnly, Lax, / and 10 minutes", c)
			}
			return withHeader("Cookie", c.Name+"="+c.Value)
		}
	}
	t.Fatalf("no flow cookie in %v", res.Header)
	return nil
}

// registerProvider registers the enabled provider acme.
func (s *testServer) registerProvider(in domain.IdentityProviderInput) {
	s.t.Helper()
	admin := s.createAdmin()
	actor := &domain.Principal{UserID: admin.ID, Profiles: admin.Profiles}
	if _, err := s.svc.IdentityProviders.CreateIdentityProvider(context.Background(), actor, in); err != nil {
		s.t.Fatal(err)
	}
}

func acmeProvider() domain.IdentityProviderInput {
	str := func(s string) *string { return &s }
	return domain.IdentityProviderInput{Slug: str("acme"), DisplayName: str("Acme SSO"), Kind: str("oidc"),
		Issuer: str("https://login.acme.example"), ClientID: str("userd"), ClientSecret: str("provider-secret")}
}

// The flow's routes are the pages': the start sends the browser to the
// provider with its cookie, the callback with the cookie ends in a page
// that goes on by itself, signed in; without it, a 400 page and no
// session. Every answer is checked against openapi.yaml.
func TestFederation_start_and_callback(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.registerProvider(acmeProvider())

	wantHTML(t, s.page("/auth/idp/nope/start"), http.StatusNotFound, "Page not found")
	start := s.page("/auth/idp/acme/start?next=" + url.QueryEscape("/account/sessions"))
	if start.Status != http.StatusSeeOther || !strings.HasPrefix(start.Header.Get("Location"), "https://acme.idp.test/authorize?") {
		t.Fatalf("start: %d %v", start.Status, start.Header)
	}
	cookie := idpCookie(t, start)
	loc, _ := url.Parse(start.Header.Get("Location"))
	if got := loc.Query().Get("redirect_uri"); got != "http://userd.test/auth/idp/acme/callback" {
		t.Errorf("redirect_uri = %q", got)
	}
	code, state := s.upstream.Approve(start.Header.Get("Location"),
		domain.ExternalIdentity{Subject: "s-1", Email: "grace@example.com", EmailVerified: true, Name: "Grace"})
	callback := "/auth/idp/acme/callback?" + url.Values{"code": {code}, "state": {state}}.Encode()

	// Without the browser's cookie: refused, and the flow is not spent.
	res := s.page(callback)
	wantHTML(t, res, http.StatusBadRequest, "Signing in with the provider did not work")
	if strings.Contains(strings.Join(res.Header.Values("Set-Cookie"), "\n"), "__Host-userd_console=") {
		t.Errorf("a refused callback set a session: %v", res.Header)
	}
	res = s.page(callback, cookie)
	wantHTML(t, res, http.StatusOK, "Signing you in")
	if !strings.Contains(string(res.Body), `content="0; url=/account/sessions"`) {
		t.Errorf("the page does not go on to next:\n%s", res.Body)
	}
	if !strings.Contains(strings.Join(res.Header.Values("Set-Cookie"), "\n"), "__Host-userd_console=") {
		t.Errorf("no session cookie: %v", res.Header.Values("Set-Cookie"))
	}
	// The cookie is spent: the same callback again is refused.
	wantHTML(t, s.page(callback), http.StatusBadRequest, "Signing in with the provider did not work")
}

// A person the provider's settings refuse gets a 403 page; a provider
// that cannot be reached a 502 page.
func TestFederation_refused_pages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	in := acmeProvider()
	off := false
	in.AutoCreate = &off
	s.registerProvider(in)
	start := s.page("/auth/idp/acme/start")
	code, state := s.upstream.Approve(start.Header.Get("Location"),
		domain.ExternalIdentity{Subject: "s-1", Email: "grace@example.com", EmailVerified: true})
	res := s.page("/auth/idp/acme/callback?"+url.Values{"code": {code}, "state": {state}}.Encode(), idpCookie(t, start))
	wantHTML(t, res, http.StatusForbidden, "There is no account for you here")

	s.upstream.SetDown(context.DeadlineExceeded)
	wantHTML(t, s.page("/auth/idp/acme/start"), http.StatusBadGateway, "Signing in with the provider did not work")
}

// The flow's routes count against the per-IP allowance of /auth.
func TestFederation_counts_against_the_auth_limit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(2))
	for range 2 {
		wantHTML(t, s.page("/auth/idp/acme/start"), http.StatusNotFound, "Page not found")
	}
	wantHTML(t, s.page("/auth/idp/acme/callback"), http.StatusTooManyRequests, "Too many attempts")
}

// The sign-in pages show a button per enabled provider, which starts its
// flow with the page's next.
func TestFederation_sign_in_page_buttons(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.registerProvider(acmeProvider())
	res := s.page("/account/login?next=" + url.QueryEscape("/account/sessions"))
	wantHTML(t, res, http.StatusOK, "Sign in")
	want := `<a class="button secondary" data-idp="acme" href="/auth/idp/acme/start?next=%2Faccount%2Fsessions">Sign in with Acme SSO</a>`
	if !strings.Contains(string(res.Body), want) {
		t.Errorf("no button %s in\n%s", want, res.Body)
	}
}
