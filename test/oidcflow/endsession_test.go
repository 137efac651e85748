package oidcflow

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestEndSession: RP-Initiated Logout 1.0 through plain HTTP, beside the
// Chromium one of openidclient_test.go. Without an id_token_hint the
// provider asks first (any site could link there) and ends nothing until
// the person's own POST; a post_logout_redirect_uri the client did not
// register, or a hint of another issuer, ends nothing and sends nobody
// there; with the app's ID token the session ends at once and the
// browser goes back with the state.
func TestEndSession(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	p.register(t, "Katherine Coleman", "kc@example.com")
	const back = "http://127.0.0.1:9/signed-out"
	app := p.newClient(t, "Mercury", map[string]any{"firstParty": true, "postLogoutRedirectUris": []string{back}})
	const redirect = "http://127.0.0.1:9/cb"
	endSession := func(q url.Values) string { return p.node.Base + "/oauth2/end_session?" + q.Encode() }
	stillSignedIn := func(t *testing.T, a *agent, what string) {
		t.Helper()
		loc, r, err := a.authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none"}))
		if err != nil || !query(t, loc).Has("code") {
			t.Errorf("%s: the browser's session should live on: %v %s %d", what, err, loc, r.Status)
		}
	}

	t.Run("no_hint_asks_first", func(t *testing.T) {
		a := p.signIn(t, "kc@example.com")
		r := a.send(t, http.MethodGet, endSession(url.Values{"client_id": {app.ID}, "post_logout_redirect_uri": {back}, "state": {"s"}}), nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `id="end-session"`) || r.Header.Get("Location") != "" {
			t.Fatalf("end_session without a hint: %d, Location %q, want the page that asks", r.Status, r.Header.Get("Location"))
		}
		stillSignedIn(t, a, "after the question")
		// The person's own POST from the page (same origin: no Origin or
		// Sec-Fetch-Site header, as Go's CrossOriginProtection admits).
		old := a.sso
		r = a.send(t, http.MethodPost, p.node.Base+"/oauth2/end_session", url.Values{"client_id": {app.ID}, "post_logout_redirect_uri": {back}, "state": {"s"}})
		link := continueLink.FindSubmatch(r.Body)
		if r.Status != http.StatusOK || link == nil || !strings.HasPrefix(string(link[1]), back) {
			t.Errorf("the page's Sign out: %d, want a page that goes back to %s: %.300s", r.Status, back, r.Body)
		}
		// The session itself ended: the cookie's old value, which a
		// careless browser could send again, opens nothing.
		loc, _, err := (&agent{p: p, sso: old}).authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "n"}))
		if err != nil {
			t.Fatal(err)
		}
		p.wantRedirectError(t, "prompt=none with the cookie of a session signed out", loc, redirect, "login_required", "n")
	})

	t.Run("unregistered_post_logout_redirect", func(t *testing.T) {
		a := p.signIn(t, "kc@example.com")
		hint := p.signedInTokens(t, a, app, redirect, nil).IDToken
		for _, target := range []string{"https://attacker.example/bye", back + "/more", "http://localhost:9/signed-out"} {
			r := a.send(t, http.MethodGet, endSession(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {target}, "state": {"s"}}), nil)
			if loc := r.Header.Get("Location"); loc != "" || strings.Contains(string(r.Body), target) {
				t.Errorf("end_session to the unregistered %s: %d, Location %q", target, r.Status, loc)
			}
		}
		stillSignedIn(t, a, "after end_session requests that were refused")
	})

	t.Run("hint_signs_out_at_once", func(t *testing.T) {
		a := p.signIn(t, "kc@example.com")
		hint := p.signedInTokens(t, a, app, redirect, nil).IDToken
		old := a.sso
		r := a.send(t, http.MethodGet, endSession(url.Values{"id_token_hint": {hint}, "post_logout_redirect_uri": {back}, "state": {"bye"}}), nil)
		loc := r.Header.Get("Location")
		if r.Status != http.StatusSeeOther || !strings.HasPrefix(loc, back+"?") || query(t, loc).Get("state") != "bye" {
			t.Fatalf("end_session with the app's ID token: %d to %q, want 303 to %s with the state", r.Status, loc, back)
		}
		if a.sso != "" {
			t.Errorf("the answer did not clear %s", ssoCookie)
		}
		loc, _, err := (&agent{p: p, sso: old}).authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "n"}))
		if err != nil {
			t.Fatal(err)
		}
		p.wantRedirectError(t, "prompt=none with the cookie of a session signed out", loc, redirect, "login_required", "n")
	})
}
