package pagesflow

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
)

// signInTOTP signs in at the sign-in page of prefix ("/admin/" or
// "/account/") with the keyboard alone: the first Tab shows the skip
// link's focus, the email and password are typed, Enter sends them; the
// second step's code is typed and sent with Enter too. Each page passes
// CheckPage under the name of its area.
func signInTOTP(t *testing.T, b *chromium.Browser, s server, prefix, area, email, password string, f totpFactor) {
	t.Helper()
	b.Open(t, s.origin+prefix, http.StatusOK) // redirected to the sign-in form
	b.WantHeading(t, "Sign in")
	b.Do(t, chromedp.KeyEvent(kb.Tab))
	if got := b.Eval(t, `document.activeElement.className + ":" + getComputedStyle(document.activeElement).outlineStyle`); got != "skip:solid" {
		t.Errorf("the first Tab focuses %q, want the skip link with its focus ring", got)
	}
	b.CheckPage(t, area+"-sign-in")
	b.Do(t, chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", password))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Confirm it is you")
	b.CheckPage(t, area+"-second-step")
	b.Do(t, chromedp.SendKeys("#code", f.nextCode(t)))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
}

// TestAdminConsole_in_chromium: an admin with TOTP signs in to the
// console, finds a user by the start of its email, lifts its login
// lock-out, revokes one of its sessions, disables it, rotates the signing
// key and reads the audit trail; each page passes CheckPage, and the API
// shows what was done.
func TestAdminConsole_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	s := startUserd(t)
	factor := s.enrolTOTP(t, adminEmail, adminPassword)

	const bobEmail = "bob@example.com"
	bob := s.register(t, "Bob", bobEmail)
	s.register(t, "Alice", "alice@example.com")
	phone, laptop := s.login(t, bobEmail, userPassword), s.login(t, bobEmail, userPassword)

	signInTOTP(t, b, s, "/admin/", "admin", adminEmail, adminPassword, factor)
	b.WantHeading(t, "Users")
	b.CheckPage(t, "admin-users")

	// Find Bob by the start of his email.
	b.Do(t, chromedp.SendKeys("#emailPrefix", "bo"))
	b.Submit(t, chromedp.Click("#search"), http.StatusOK)
	if rows := b.Text(t, "#users tbody"); !strings.Contains(rows, bobEmail) || strings.Contains(rows, "alice@") {
		t.Errorf("the search for bo… lists %q", rows)
	}
	b.Submit(t, chromedp.Click(`#users a[href="/admin/users/`+bob+`"]`), http.StatusOK)
	b.WantHeading(t, bobEmail)
	b.CheckPage(t, "admin-user")

	// Bob mistypes his password until he is locked out; "Unlock sign-in"
	// lets his right password in at once.
	for range 5 {
		kit.Want(t, "a wrong password", s.api(t, http.MethodPost, "/auth/login",
			map[string]string{"email": bobEmail, "password": "not his password"}, ""), http.StatusUnauthorized, nil)
	}
	kit.Want(t, "the right password while locked out", s.api(t, http.MethodPost, "/auth/login",
		map[string]string{"email": bobEmail, "password": userPassword}, ""), http.StatusTooManyRequests, nil)
	b.Submit(t, chromedp.Click("#unlock"), http.StatusOK)
	if notice := b.Text(t, ".notice"); !strings.Contains(notice, "Failed sign-in attempts are cleared") {
		t.Errorf("the notice after unlocking: %q", notice)
	}
	s.login(t, bobEmail, userPassword)

	// Revoke the phone's session: the phone is signed out, the laptop not.
	// With the keyboard: the button focused, its focus ring shown, Enter.
	revoke := "#revoke-" + kit.ClaimsOf(t, phone.AccessToken).SID
	b.WantFocusVisible(t, revoke)
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	if r := s.api(t, http.MethodPost, "/auth/refresh-token", map[string]string{"refreshToken": phone.RefreshToken}, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("the revoked session's refresh: %d %s, want 401", r.Status, r.Body)
	}
	if r := s.api(t, http.MethodGet, "/api/users/me", nil, laptop.AccessToken); r.Status != http.StatusOK {
		t.Errorf("the other session: %d, want 200", r.Status)
	}

	// Disable Bob: his password no longer signs in, his sessions end.
	b.Submit(t, chromedp.Click("#disable"), http.StatusOK)
	if notice := b.Text(t, ".notice"); !strings.Contains(notice, "disabled") {
		t.Errorf("the notice after disabling: %q", notice)
	}
	if r := s.api(t, http.MethodPost, "/auth/login", map[string]string{"email": bobEmail, "password": userPassword}, ""); r.Status != http.StatusForbidden ||
		!strings.Contains(string(r.Body), `"account_disabled"`) {
		t.Errorf("a disabled account's login: %d %s, want 403 account_disabled", r.Status, r.Body)
	}
	if r := s.api(t, http.MethodGet, "/api/users/me", nil, laptop.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("a disabled account's session: %d, want 401", r.Status)
	}

	// Rotate the signing keys: each list, the access tokens' and the
	// OpenID provider's, gains a new one, which the issuer publishes in
	// the JWK set once it next reads the keys.
	b.Open(t, s.origin+"/admin/keys", http.StatusOK)
	b.CheckPage(t, "admin-keys")
	before, beforeOIDC := keyRows(t, b, "keys"), keyRows(t, b, "oidc-keys")
	b.Submit(t, chromedp.Click("#rotate"), http.StatusOK)
	if after, afterOIDC := keyRows(t, b, "keys"), keyRows(t, b, "oidc-keys"); after != before+1 || afterOIDC != beforeOIDC+1 || beforeOIDC == 0 {
		t.Errorf("the keys page lists %d and %d keys after the rotation, want %d and %d", after, afterOIDC, before+1, beforeOIDC+1)
	}

	// The audit trail, filtered to Bob: the admin's actions, the admin
	// named as their actor.
	b.Open(t, s.origin+"/admin/audit", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#user", bobEmail))
	b.Submit(t, chromedp.Click("#filter"), http.StatusOK)
	events := b.Text(t, "#events")
	for _, want := range []string{"user.updated", "session.revoked", "login.unlocked", adminEmail} {
		if !strings.Contains(events, want) {
			t.Errorf("Bob's audit trail lacks %q:\n%s", want, events)
		}
	}
	b.CheckPage(t, "admin-audit")

	// A page of another site, open in the same browser, posts the
	// console's form that would enable Bob again: refused (the browser
	// does not even send the console's SameSite=Strict cookie with it),
	// and Bob stays disabled.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><title>Win a prize</title><form method="post" action="%s/admin/users/%s/enable">`+
			`<button id="go">Claim</button></form>`, s.origin, bob)
	}))
	t.Cleanup(evil.Close)
	b.Open(t, evil.URL, http.StatusOK)
	b.Submit(t, chromedp.Click("#go"), http.StatusForbidden)
	if r := s.api(t, http.MethodPost, "/auth/login", map[string]string{"email": bobEmail, "password": userPassword}, ""); r.Status != http.StatusForbidden {
		t.Errorf("after the cross-site post, Bob's login: %d, want 403 (still disabled)", r.Status)
	}
}

// keyRows is the number of keys the keys page lists in its table id.
func keyRows(t *testing.T, b *chromium.Browser, id string) int {
	t.Helper()
	return chromium.Evaluate[int](t, b, `document.querySelectorAll("#`+id+` tbody tr").length`)
}

// TestAdminConsole_off: with USERD_ADMIN_CONSOLE=false every path of the
// console is a 404, its sign-in included, and the account page stays.
func TestAdminConsole_off(t *testing.T) {
	t.Parallel()
	s := startUserd(t, map[string]string{"USERD_ADMIN_CONSOLE": "false"})
	noRedirect := kit.Client
	for _, path := range []string{"/admin/", "/admin/login", "/admin/users", "/admin/keys", "/admin/assets/passkey.js"} {
		res, err := noRedirect.Get(s.node.Base + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, res.StatusCode)
		}
	}
	res, err := noRedirect.PostForm(s.node.Base+"/admin/login", url.Values{"email": {adminEmail}, "password": {adminPassword}})
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /admin/login: %d, want 404", res.StatusCode)
	}
	res, err = noRedirect.Get(s.node.Base + "/account/login")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /account/login: %d, want 200", res.StatusCode)
	}
}
