package multinode

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The OpenID provider's flow crosses nodes: the request is authorized on
// node A, the browser goes on and gets its code on node B, the code is
// exchanged on B, the refresh token used on A; a revocation on A ends
// the tokens on B within 1 s. Requests and codes live in the database.
func TestOIDCFlowAcrossNodes(t *testing.T) { eachBackend(t, oidcFlowAcrossNodes) }

// noRedirects is a client that hands back every redirect.
var noRedirects = &http.Client{
	Timeout:       20 * time.Second,
	Transport:     client.Transport,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func oidcFlowAcrossNodes(t *testing.T, c *cluster) {
	const a, b = 0, 1
	const email = "oidc@example.com"
	const redirectURI = "http://127.0.0.1/cb"
	admin := c.login(a, adminEmail, adminPassword)
	r := c.post(a, "/api/oauth-clients", map[string]any{"name": "Cross", "type": "public", "firstParty": true,
		"redirectUris": []string{redirectURI}}, admin.AccessToken)
	if r.Status != http.StatusCreated {
		t.Fatalf("create client: %d %s", r.Status, r.Body)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &created); err != nil {
		t.Fatal(err)
	}
	c.register(a, email)
	sso := c.pagesSignIn(a, email, userPassword)

	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {created.ID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"scope": {"openid email offline_access"}, "state": {"s1"}, "nonce": {"n1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	cont := c.redirect(a, "/oauth2/authorize?"+q.Encode(), "")
	if !strings.HasPrefix(cont, "/oauth2/authorize/continue?") {
		t.Fatalf("authorize on A sent the browser to %q", cont)
	}
	back, err := url.Parse(c.redirect(b, cont, sso))
	if err != nil || back.Scheme+"://"+back.Host+back.Path != redirectURI || back.Query().Get("code") == "" ||
		back.Query().Get("state") != "s1" {
		t.Fatalf("continue on B sent the browser to %v", back)
	}

	tokens := c.tokenRequest(b, url.Values{"grant_type": {"authorization_code"}, "client_id": {created.ID},
		"code": {back.Query().Get("code")}, "redirect_uri": {redirectURI}, "code_verifier": {verifier}})
	if tokens.IDToken == "" || tokens.RefreshToken == "" {
		t.Fatalf("exchange on B: %+v", tokens)
	}
	refreshed := c.tokenRequest(a, url.Values{"grant_type": {"refresh_token"}, "client_id": {created.ID},
		"refresh_token": {tokens.RefreshToken}})
	if s := c.send(b, http.MethodGet, "/oauth2/userinfo", refreshed.AccessToken); s != http.StatusOK {
		t.Fatalf("userinfo on B: %d", s)
	}

	rev, err := client.PostForm(c.urls[a]+"/oauth2/revoke", url.Values{"client_id": {created.ID}, "token": {refreshed.RefreshToken}})
	if err != nil || rev.StatusCode != http.StatusOK {
		t.Fatalf("revoke on A: %v %v", rev, err)
	}
	_ = rev.Body.Close()
	revoked := time.Now()
	for c.send(b, http.MethodGet, "/oauth2/userinfo", refreshed.AccessToken) != http.StatusUnauthorized {
		if time.Since(revoked) > time.Second {
			t.Fatal("node B still accepts the revoked session's access token after 1 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pagesSignIn signs email in through the pages of node and returns the
// Cookie header of the browser's provider session. Go's cookie jar sends
// no Secure cookie over http, as a browser does on a loopback host: the
// test carries the cookie itself.
func (c *cluster) pagesSignIn(node int, email, password string) string {
	c.t.Helper()
	res, err := noRedirects.PostForm(c.urls[node]+"/account/login", url.Values{"email": {email}, "password": {password}})
	if err != nil {
		c.t.Fatalf("sign in on node %d: %v", node, err)
	}
	_ = res.Body.Close()
	for _, ck := range res.Cookies() {
		if ck.Name == "__Host-userd_sso" && ck.Value != "" {
			return ck.Name + "=" + ck.Value
		}
	}
	c.t.Fatalf("the sign-in on node %d (%d) set no __Host-userd_sso", node, res.StatusCode)
	return ""
}

// redirect GETs path on node with cookie and returns where it sends the
// browser.
func (c *cluster) redirect(node int, path, cookie string) string {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.urls[node]+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s on node %d: %v", path, node, err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode/100 != 3 || loc == "" {
		c.t.Fatalf("GET %s on node %d: %d, no redirect; %s", path, node, res.StatusCode, body)
	}
	return loc
}

// tokenAnswer is the token endpoint's answer.
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// tokenRequest posts form to the token endpoint of node and wants 200.
func (c *cluster) tokenRequest(node int, form url.Values) tokenAnswer {
	c.t.Helper()
	res, err := client.PostForm(c.urls[node]+"/oauth2/token", form)
	if err != nil {
		c.t.Fatalf("token endpoint on node %d: %v", node, err)
	}
	defer func() { _ = res.Body.Close() }()
	body, _ := io.ReadAll(res.Body)
	var out tokenAnswer
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil {
		c.t.Fatalf("token endpoint on node %d (%s): %d %s", node, form.Get("grant_type"), res.StatusCode, body)
	}
	return out
}
