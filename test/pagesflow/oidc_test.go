package pagesflow

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
)

// TestOIDCFlow_in_chromium: an app of another origin signs a person in
// through the real binary's OpenID provider, in headless Chromium: the
// sign-in page names the app, consent, back to the app with a code (by
// the page that goes on after a POST), the code exchanged; a second
// flow goes straight through on the provider's browser session; the
// account lists the app; end_session with the ID token as hint returns
// to the app, and the next flow asks for the sign-in again. Skipped
// until the binary serves the provider's routes.
func TestOIDCFlow_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	s := startUserd(t)
	if res := s.api(t, http.MethodGet, "/.well-known/openid-configuration", nil, ""); res.Status == http.StatusNotFound {
		t.Skip("the binary does not serve the OpenID provider's routes yet")
	}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><title>App</title></head><body><h1 id="app-landed">App</h1></body></html>`)
	}))
	defer app.Close()
	admin := s.login(t, adminEmail, adminPassword)
	res := s.api(t, http.MethodPost, "/api/oauth-clients", map[string]any{"name": "Grafana", "type": "confidential",
		"redirectUris": []string{app.URL + "/cb"}, "postLogoutRedirectUris": []string{app.URL + "/bye"}}, admin.AccessToken)
	var client struct{ ID, ClientSecret string }
	if err := json.Unmarshal(res.Body, &client); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("create the client: %d %s", res.Status, res.Body)
	}
	s.register(t, "Bob", "bob@example.com")

	verifier := "a-code-verifier-of-at-least-forty-three-characters-0123456789"
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {client.ID}, "redirect_uri": {app.URL + "/cb"}, "response_type": {"code"},
		"scope": {"openid email profile"}, "state": {"first"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "nonce": {"n1"}}
	b.Open(t, s.origin+"/oauth2/authorize?"+q.Encode(), http.StatusOK)
	b.WantHeading(t, "Sign in")
	if got := b.Text(t, "#continue-to"); got != "Sign in to continue to Grafana." {
		t.Errorf("the sign-in page says %q", got)
	}
	b.Do(t, chromedp.SendKeys("#email", "bob@example.com"), chromedp.SendKeys("#password", userPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Allow Grafana to use your account?")
	b.Submit(t, chromedp.Click("#consent-allow"), http.StatusOK)
	code := landedWith(t, b, app.URL+"/cb", "first")

	idToken := exchange(t, s, client.ID, client.ClientSecret, code, app.URL+"/cb", verifier)

	// The browser's session and the grant: straight back to the app.
	q.Set("state", "second")
	b.Open(t, s.origin+"/oauth2/authorize?"+q.Encode(), http.StatusOK)
	landedWith(t, b, app.URL+"/cb", "second")

	b.Open(t, s.origin+"/account/apps", http.StatusOK)
	if got := b.Text(t, "#apps .title"); got != "Grafana" {
		t.Errorf("the apps with access list %q", got)
	}

	// The app signs the person out with its ID token as hint.
	e := url.Values{"id_token_hint": {idToken}, "post_logout_redirect_uri": {app.URL + "/bye"}, "state": {"bye"}}
	b.Open(t, s.origin+"/oauth2/end_session?"+e.Encode(), http.StatusOK)
	landedWith(t, b, app.URL+"/bye", "bye")
	q.Set("state", "third")
	b.Open(t, s.origin+"/oauth2/authorize?"+q.Encode(), http.StatusOK)
	b.WantHeading(t, "Sign in")
	b.CheckConsole(t)
}

// landedWith waits for the app's page at path and returns the code of
// its query, checking its state.
func landedWith(t *testing.T, b *chromium.Browser, path, state string) string {
	t.Helper()
	b.WaitText(t, "#app-landed")
	u, err := url.Parse(b.Eval(t, "location.href"))
	if err != nil || u.Scheme+"://"+u.Host+u.Path != path || u.Query().Get("state") != state {
		t.Fatalf("the browser is at %v, want %s with state %s", u, path, state)
	}
	return u.Query().Get("code")
}

// exchange trades the code at the token endpoint and returns the ID
// token.
func exchange(t *testing.T, s server, id, secret, code, redirectURI, verifier string) string {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI},
		"code_verifier": {verifier}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.node.Base+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var tok struct {
		IDToken string `json:"id_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&tok); err != nil || res.StatusCode != http.StatusOK || tok.IDToken == "" {
		t.Fatalf("the token endpoint: %d, %v", res.StatusCode, err)
	}
	return tok.IDToken
}
