package upstream

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// TestMock_cases: each case of mockidp.mjs does to a flow what it says,
// seen by a client of plain HTTP: the redirect's error, or the ID
// token's claims (the signature is userd's to check; here the kid is
// the JWKS's in every case).
func TestMock_cases(t *testing.T) {
	t.Parallel()
	m := StartMock(t)
	var jwks struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	kit.Want(t, "the mock's JWKS", kit.Send(t, http.MethodGet, m.Issuer+"/jwks", nil, ""), http.StatusOK, &jwks)
	if len(jwks.Keys) != 1 {
		t.Fatalf("the mock's JWKS has %d keys, want 1", len(jwks.Keys))
	}
	person := Claims{Subject: "hopper", Email: "grace@example.com", EmailVerified: true, Name: "Grace Hopper"}
	for _, c := range []Case{OK, ProviderError, WrongNonce, WrongIssuer, WrongAudience, Expired, ForeignKey} {
		state := "st-" + rand.Text()
		m.Expect(t, state, c, person)
		verifier := rand.Text() + rand.Text()
		sum := sha256.Sum256([]byte(verifier))
		r := kit.Send(t, http.MethodGet, m.Issuer+"/authorize?"+url.Values{
			"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
			"state": {state}, "nonce": {"n-1"}, "scope": {"openid email"},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		}.Encode(), nil, "")
		loc, err := url.Parse(r.Header.Get("Location"))
		if r.Status != http.StatusFound || err != nil || loc.Query().Get("state") != state {
			t.Fatalf("%s: authorize answered %d to %q, want 302 back with the state", c, r.Status, r.Header.Get("Location"))
		}
		if c == ProviderError {
			if q := loc.Query(); q.Get("error") != "access_denied" || q.Has("code") {
				t.Errorf("%s: the redirect %s, want error=access_denied and no code", c, loc)
			}
			continue
		}
		req, err := http.NewRequest(http.MethodPost, m.Issuer+"/token", strings.NewReader(url.Values{
			"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {"http://127.0.0.1:9/cb"},
			"code_verifier": {verifier}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("app", "secret")
		var tok struct {
			IDToken     string `json:"id_token"`
			AccessToken string `json:"access_token"`
		}
		kit.Want(t, string(c)+": the token endpoint", kit.Do(t, req), http.StatusOK, &tok)
		var header struct {
			Kid string `json:"kid"`
		}
		kit.DecodePart(t, tok.IDToken, 0, &header)
		var claims struct {
			Claims
			Iss   string `json:"iss"`
			Aud   any    `json:"aud"`
			Exp   int64  `json:"exp"`
			Nonce string `json:"nonce"`
		}
		kit.DecodePart(t, tok.IDToken, 1, &claims)
		if header.Kid != jwks.Keys[0].Kid || claims.Claims != person {
			t.Errorf("%s: the ID token's kid %q and person %s, want the JWKS's %q and %s", c, header.Kid, claims.Claims, jwks.Keys[0].Kid, person)
		}
		want := map[Case]bool{
			WrongNonce:    claims.Nonce != "n-1",
			WrongIssuer:   claims.Iss != m.Issuer,
			WrongAudience: claims.Aud != "app",
			Expired:       claims.Exp < time.Now().Unix(),
		}
		for k, wrong := range want {
			if wrong != (k == c) {
				t.Errorf("%s: the ID token %+v, want only the fault of %s", c, claims, c)
			}
		}
		var info Claims
		kit.Want(t, string(c)+": userinfo", kit.Send(t, http.MethodGet, m.Issuer+"/userinfo", nil, tok.AccessToken), http.StatusOK, &info)
		if info != person {
			t.Errorf("%s: userinfo %s, want %s", c, info, person)
		}
	}
}

// TestOIDC_discovery: oidc-provider runs as configured: its issuer on
// localhost, code flow only, S256 alone.
func TestOIDC_discovery(t *testing.T) {
	t.Parallel()
	o := StartOIDC(t, OIDCOptions{ClientID: "app", ClientSecret: "not-a-real-secret", RedirectURIs: []string{"http://127.0.0.1:9/cb"},
		Accounts: map[string]Claims{"hopper": {Email: "grace@example.com", EmailVerified: true}}})
	var d struct {
		Issuer  string   `json:"issuer"`
		PKCE    []string `json:"code_challenge_methods_supported"`
		Claims  []string `json:"claims_supported"`
		Respond []string `json:"response_types_supported"`
	}
	r := kit.Send(t, http.MethodGet, o.Issuer+"/.well-known/openid-configuration", nil, "")
	if err := json.Unmarshal(r.Body, &d); err != nil || r.Status != http.StatusOK {
		t.Fatalf("discovery: %s", r)
	}
	if !strings.HasPrefix(d.Issuer, "http://localhost:") || !slices.Equal(d.PKCE, []string{"S256"}) || !slices.Contains(d.Claims, "email_verified") {
		t.Errorf("discovery %+v, want an issuer on localhost, S256 alone and email_verified", d)
	}
}
