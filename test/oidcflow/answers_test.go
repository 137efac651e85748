package oidcflow

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// TestToken_answers: what the token, userinfo, introspection and
// revocation endpoints answer besides the flows: no-store on every token
// answer, a refresh token only for offline_access and a client with the
// grant, userinfo by POST, RFC 7009's 200 for any token, introspection
// closed to public clients, unsupported_grant_type, userd's own refresh
// refusing a client's refresh token, and a provider session ended from
// the sessions API.
func TestToken_answers(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	userID := p.register(t, "Hedy Lamarr", "hedy@example.com")
	a := p.signIn(t, "hedy@example.com")
	app := p.newClient(t, "Torpedo", map[string]any{"firstParty": true})
	spa := p.newClient(t, "Frequency hopping", map[string]any{"firstParty": true, "type": "public"})
	noRefresh := p.newClient(t, "Once", map[string]any{"firstParty": true, "grantTypes": []string{"authorization_code"}})
	const redirect = "http://127.0.0.1:9/cb"

	t.Run("no_store_and_refresh_token_when_due", func(t *testing.T) {
		for _, c := range []struct {
			name    string
			client  client
			scope   string
			refresh bool
		}{
			{"offline_access", app, "openid email offline_access", true},
			{"no_offline_access", app, "openid email", false},
			{"client_without_the_grant", noRefresh, "openid email offline_access", false},
		} {
			pk := newPKCE()
			code := a.code(t, p.authRequest(c.client, redirect, pk, map[string]string{"scope": c.scope}))
			r := p.token(t, c.client, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {pk.verifier}})
			var tok tokens
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &tok) != nil {
				t.Errorf("%s: %s", c.name, r)
				continue
			}
			if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
				t.Errorf("%s: Cache-Control %q, want no-store", c.name, cc)
			}
			if (tok.RefreshToken != "") != c.refresh || tok.IDToken == "" || !strings.EqualFold(tok.TokenType, "Bearer") {
				t.Errorf("%s: refresh token %v, ID token %v, token_type %q; want a refresh token %v, an ID token, Bearer",
					c.name, tok.RefreshToken != "", tok.IDToken != "", tok.TokenType, c.refresh)
			}
		}
	})

	t.Run("userinfo_by_post", func(t *testing.T) {
		tok := p.signedInTokens(t, a, app, redirect, nil)
		var ui map[string]any
		kit.Want(t, "POST /oauth2/userinfo", kit.Send(t, http.MethodPost, p.node.Base+"/oauth2/userinfo", nil, tok.AccessToken), http.StatusOK, &ui)
		if ui["sub"] != userID {
			t.Errorf("userinfo by POST: %v", ui)
		}
		p.wantUserInfoRefused(t, "garbage", "not-a-token")
	})

	t.Run("revoke_any_token", func(t *testing.T) {
		for _, token := range []string{"not-a-token", strings.Repeat("x", 200)} {
			if r := p.revoke(t, app, token); r.Status != http.StatusOK {
				t.Errorf("revoke %q: %s, want 200 (RFC 7009 2.2)", token, r)
			}
		}
	})

	t.Run("public_client_cannot_introspect", func(t *testing.T) {
		tok := p.signedInTokens(t, a, spa, redirect, nil)
		form := url.Values{"token": {tok.AccessToken}, "client_id": {spa.ID}}
		r := kit.Do(t, formRequest(t, p.node.Base+"/oauth2/introspect", form))
		wantOAuthError(t, "introspection by a public client", r, http.StatusUnauthorized, "invalid_client")
	})

	t.Run("unsupported_grant_type", func(t *testing.T) {
		for _, g := range []string{"password", "implicit", "urn:ietf:params:oauth:grant-type:device_code"} {
			wantOAuthError(t, "grant_type="+g, p.token(t, app, url.Values{"grant_type": {g}, "username": {"hedy@example.com"}, "password": {userPassword}}),
				http.StatusBadRequest, "unsupported_grant_type")
		}
	})

	t.Run("client_refresh_token_not_for_userd", func(t *testing.T) {
		tok := p.signedInTokens(t, a, app, redirect, nil)
		r := p.api(t, http.MethodPost, "/auth/refresh-token", map[string]string{"refreshToken": tok.RefreshToken}, "")
		if r.Status != http.StatusUnauthorized {
			t.Errorf("a client's refresh token at userd's own /auth/refresh-token: %s, want 401", r)
		}
		kit.Want(t, "the client's refresh afterwards", p.refresh(t, app, tok.RefreshToken), http.StatusOK, nil)
	})

	t.Run("secret_rotated", func(t *testing.T) {
		svc := p.newClient(t, "Rotating", map[string]any{"firstParty": true})
		var rotated struct {
			Secret string `json:"clientSecret"`
		}
		kit.Want(t, "a new secret", p.api(t, http.MethodPost, "/api/oauth-clients/"+svc.ID+"/secret", nil, p.admin), http.StatusOK, &rotated)
		grant := url.Values{"grant_type": {"client_credentials"}, "scope": {"email"}}
		wantOAuthError(t, "the old secret after a rotation", p.token(t, svc, grant), http.StatusUnauthorized, "invalid_client")
		fresh := svc
		fresh.Secret = rotated.Secret
		kit.Want(t, "the new secret", p.token(t, fresh, grant), http.StatusOK, nil)
	})

	t.Run("redirect_uri_removed", func(t *testing.T) {
		c := p.newClient(t, "Moving", map[string]any{"firstParty": true, "redirectUris": []string{registeredRedirect, "http://127.0.0.1/old"}})
		a.code(t, p.authRequest(c, "http://127.0.0.1:9/old", newPKCE(), nil))
		kit.Want(t, "drop a redirect URI", p.api(t, http.MethodPut, "/api/oauth-clients/"+c.ID,
			map[string]any{"redirectUris": []string{registeredRedirect}}, p.admin), http.StatusOK, nil)
		r := a.send(t, http.MethodGet, p.authRequest(c, "http://127.0.0.1:9/old", newPKCE(), nil), nil)
		if r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" {
			t.Errorf("a redirect URI removed from the client: %d to %q, want the 400 page", r.Status, r.Header.Get("Location"))
		}
	})

	t.Run("session_revoked_through_api", func(t *testing.T) {
		tok := p.signedInTokens(t, a, app, redirect, nil)
		sid, _ := claimsOf(t, tok.IDToken)["sid"].(string)
		kit.Want(t, "revoke the client's session", p.api(t, http.MethodDelete, "/api/users/"+userID+"/sessions/"+sid, nil, p.admin), http.StatusNoContent, nil)
		p.wantUserInfoRefused(t, "the access token of a session revoked through the API", tok.AccessToken)
		wantOAuthError(t, "the refresh token of a session revoked through the API", p.refresh(t, app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
	})
}

// formRequest is a POST of a form.
func formRequest(t *testing.T, target string, form url.Values) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// claimsOf reads the payload of a JWT, unverified: the libraries of the
// other tests verify.
func claimsOf(t *testing.T, jwt string) map[string]any {
	t.Helper()
	var c map[string]any
	kit.DecodePart(t, jwt, 1, &c)
	return c
}

// TestProvider_off: with USERD_OIDC_PROVIDER=false the provider's routes
// and both metadata documents are 404, and the pages' steps of the flow
// too.
func TestProvider_off(t *testing.T) {
	t.Parallel()
	p := startProvider(t, map[string]string{"USERD_OIDC_PROVIDER": "false"})
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/.well-known/openid-configuration"},
		{http.MethodGet, "/.well-known/oauth-authorization-server"},
		{http.MethodGet, "/oauth2/authorize?client_id=x"},
		{http.MethodPost, "/oauth2/token"},
		{http.MethodGet, "/oauth2/userinfo"},
		{http.MethodPost, "/oauth2/introspect"},
		{http.MethodPost, "/oauth2/revoke"},
		{http.MethodGet, "/oauth2/end_session"},
		{http.MethodGet, "/oauth2/authorize/continue?request=x"},
		{http.MethodPost, "/oauth2/register"},
	} {
		if got := kit.Send(t, r.method, p.node.Base+r.path, nil, ""); got.Status != http.StatusNotFound {
			t.Errorf("%s %s with the provider off: %d, want 404", r.method, r.path, got.Status)
		}
	}
}

// TestIssuer_trailing_slash: USERD_PUBLIC_URL with a trailing slash
// gives the issuer without it (contract-identity.md), which go-oidc's
// discovery checks against the URL it was given.
func TestIssuer_trailing_slash(t *testing.T) {
	t.Parallel()
	addr := userdproc.FreeAddr(t)
	p := startProvider(t, map[string]string{"USERD_HTTP_ADDR": addr, "USERD_PUBLIC_URL": "http://" + addr + "/"})
	op, err := oidc.NewProvider(stepContext(t), "http://"+addr)
	if err != nil {
		t.Fatalf("discovery of the issuer without the slash: %v", err)
	}
	var meta struct {
		Issuer string `json:"issuer"`
		JWKS   string `json:"jwks_uri"`
	}
	if err := op.Claims(&meta); err != nil {
		t.Fatal(err)
	}
	if meta.Issuer != "http://"+addr || meta.JWKS != "http://"+addr+"/.well-known/jwks.json" {
		t.Errorf("metadata of %s: %+v", p.node.Base, meta)
	}
}
