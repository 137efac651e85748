package oidcflow

import (
	"crypto/rand"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/userd/userd/test/kit"
)

// TestGoOIDC_code_flow: CoreOS's go-oidc and golang.org/x/oauth2, as a
// Go web app would use them: discovery (the issuer of the document must
// be the one asked), the code flow with PKCE (S256) for a confidential
// client of each ID token algorithm, the ID token checked by go-oidc's
// verifier (signature from the JWKS, iss, aud, exp) with its nonce and
// at_hash, the claims, userinfo, the grant in the user's sessions under
// the client's name, and a refresh through oauth2's token source. The browser is the plain-HTTP agent: no Chromium, no Node.js.
func TestGoOIDC_code_flow(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	const email = "katherine@example.com"
	userID := p.register(t, "Katherine Johnson", email)
	a := p.signIn(t, email)
	ctx := oidc.ClientContext(stepContext(t), &http.Client{Timeout: 30 * time.Second})
	op, err := oidc.NewProvider(ctx, p.issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var meta struct {
		Algs     []string `json:"id_token_signing_alg_values_supported"`
		Methods  []string `json:"code_challenge_methods_supported"`
		IssParam bool     `json:"authorization_response_iss_parameter_supported"`
	}
	if err := op.Claims(&meta); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(meta.Algs, []string{"RS256", "EdDSA"}) || !slices.Equal(meta.Methods, []string{"S256"}) || !meta.IssParam {
		t.Errorf("discovery: %+v, want algs [RS256 EdDSA], S256 alone, the iss parameter", meta)
	}

	for _, alg := range []string{oidc.RS256, oidc.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			c := p.newClient(t, "Go app "+alg, map[string]any{"idTokenSigningAlg": alg})
			conf := oauth2.Config{
				ClientID: c.ID, ClientSecret: c.Secret, Endpoint: op.Endpoint(),
				RedirectURL: "http://127.0.0.1:8765/cb",
				Scopes:      []string{oidc.ScopeOpenID, "profile", "email", oidc.ScopeOfflineAccess},
			}
			verifier, state, nonce := oauth2.GenerateVerifier(), rand.Text(), rand.Text()
			back, r, err := a.authorize(t, conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)))
			if err != nil {
				t.Fatalf("authorize: %v: %s", err, r)
			}
			q := query(t, back)
			if q.Get("state") != state || q.Get("iss") != p.issuer || q.Get("code") == "" {
				t.Fatalf("the redirect to the app: %s, want its code, the state and iss %s", back, p.issuer)
			}
			tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			raw, _ := tok.Extra("id_token").(string)
			idt, err := op.Verifier(&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{alg}}).Verify(ctx, raw)
			if err != nil {
				t.Fatalf("go-oidc's verifier refuses the ID token: %v", err)
			}
			if idt.Subject != userID || idt.Nonce != nonce || idt.Issuer != p.issuer || !slices.Equal(idt.Audience, []string{c.ID}) {
				t.Errorf("ID token sub %q nonce %q iss %q aud %q, want %s %s %s [%s]", idt.Subject, idt.Nonce, idt.Issuer, idt.Audience, userID, nonce, p.issuer, c.ID)
			}
			if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
				t.Errorf("at_hash: %v", err)
			}
			var claims struct {
				Name          string   `json:"name"`
				Email         string   `json:"email"`
				EmailVerified *bool    `json:"email_verified"`
				AuthTime      int64    `json:"auth_time"`
				AMR           []string `json:"amr"`
				ACR           string   `json:"acr"`
				SID           string   `json:"sid"`
			}
			if err := idt.Claims(&claims); err != nil {
				t.Fatal(err)
			}
			if claims.Name != "Katherine Johnson" || claims.Email != email || claims.EmailVerified == nil || claims.AuthTime == 0 ||
				!slices.Equal(claims.AMR, []string{"pwd"}) || claims.ACR != "aal1" || claims.SID == "" {
				t.Errorf("the ID token's claims: %+v", claims)
			}
			ui, err := op.UserInfo(ctx, oauth2.StaticTokenSource(tok))
			if err != nil {
				t.Fatalf("userinfo: %v", err)
			}
			if ui.Subject != userID || ui.Email != email {
				t.Errorf("userinfo: sub %q email %q, want %s %s", ui.Subject, ui.Email, userID, email)
			}
			p.wantSessionOf(t, userID, claims.SID, c, "Go app "+alg)

			// A refresh through oauth2's token source, as an app does when
			// the access token expires.
			refreshed, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if refreshed.AccessToken == tok.AccessToken || refreshed.RefreshToken == "" || refreshed.RefreshToken == tok.RefreshToken {
				t.Errorf("refresh: the same tokens again, or no new refresh token")
			}
			if raw, ok := refreshed.Extra("id_token").(string); ok {
				again, err := op.Verifier(&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{alg}}).Verify(ctx, raw)
				if err != nil || again.Subject != userID {
					t.Errorf("the refresh's ID token: %v (sub %v)", err, again)
				}
			}
			if ui, err := op.UserInfo(ctx, oauth2.StaticTokenSource(refreshed)); err != nil || ui.Subject != userID {
				t.Errorf("userinfo with the refreshed token: %v", err)
			}
		})
	}
}

// wantSessionOf fails t unless the user's sessions list the session sid,
// granted to the client c under its name.
func (p provider) wantSessionOf(t *testing.T, userID, sid string, c client, name string) {
	t.Helper()
	var sessions []struct {
		ID       string `json:"id"`
		ClientID string `json:"clientId"`
		Client   string `json:"client"`
	}
	kit.Want(t, "the user's sessions", p.api(t, http.MethodGet, "/api/users/"+userID+"/sessions", nil, p.admin), http.StatusOK, &sessions)
	for _, s := range sessions {
		if s.ClientID == c.ID {
			if s.Client != name || s.ID != sid {
				t.Errorf("the client's session: %+v, want id %s (the ID token's sid) and client %q", s, sid, name)
			}
			return
		}
	}
	t.Errorf("the user's sessions %+v have none of the client %s", sessions, c.ID)
}

// TestGoOIDC_key_rotation: `userd keys rotate --now` on a running
// provider (then a restart, rather than waiting for the 30 s reload):
// the next ID token is signed by a new RS256 key, which an app's go-oidc
// verifier, made before the rotation, fetches from the JWKS by itself;
// an ID token of the old key still verifies.
func TestGoOIDC_key_rotation(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	p.register(t, "Evelyn Boyd Granville", "evelyn@example.com")
	a := p.signIn(t, "evelyn@example.com")
	app := p.newClient(t, "Orbit", map[string]any{"firstParty": true})
	ctx := oidc.ClientContext(stepContext(t), &http.Client{Timeout: 30 * time.Second})
	op, err := oidc.NewProvider(ctx, p.issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	verifier := op.Verifier(&oidc.Config{ClientID: app.ID})
	const redirect = "http://127.0.0.1:9/cb"
	idToken := func() (string, string) {
		raw := p.signedInTokens(t, a, app, redirect, nil).IDToken
		var header struct {
			Kid string `json:"kid"`
		}
		kit.DecodePart(t, raw, 0, &header)
		if _, err := verifier.Verify(ctx, raw); err != nil {
			t.Errorf("go-oidc refuses the ID token of the key %s: %v", header.Kid, err)
		}
		return raw, header.Kid
	}
	before, oldKID := idToken()
	if code, out, errOut := p.node.Run("", "keys", "rotate", "--now"); code != 0 {
		t.Fatalf("keys rotate --now: %d %s%s", code, out, errOut)
	}
	p.node.Stop()
	p.node.Start()
	_, newKID := idToken()
	if newKID == oldKID {
		t.Errorf("after keys rotate --now the ID token is still signed by %s", oldKID)
	}
	if _, err := verifier.Verify(ctx, before); err != nil {
		t.Errorf("the ID token of the old key after the rotation: %v", err)
	}
}
