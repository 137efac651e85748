package jwtissuer

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
)

const providerIssuer = "https://id.example.com"

// newProviderTokens starts an Issuer of alg with the provider on and
// returns its provider's tokens.
func newProviderTokens(t *testing.T, alg string) (*ProviderTokens, *Issuer, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(t0)
	iss := startIssuer(t, newFakeKeyStore(), clk, providerOpts(alg))
	return NewProviderTokens(iss, providerIssuer), iss, clk
}

func accessClaimsFor(now time.Time) domain.OAuthAccessClaims {
	return domain.OAuthAccessClaims{Subject: "6a0000000000000000000001", ClientID: "6b0000000000000000000002",
		Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail}, SessionID: "0123456789abcdef0123456789abcdef",
		AuthTime: now.Add(-time.Minute), AMR: domain.AMRPasswordOTP, ID: "jti-1",
		IssuedAt: now, ExpiresAt: now.Add(15 * time.Minute)}
}

// TestProviderTokens_access_token_round_trip: an access token says what it
// was given, with the typ of RFC 9068, signed with EdDSA where userd's own
// access tokens are (else RS256), and verifies.
func TestProviderTokens_access_token_round_trip(t *testing.T) {
	for _, tt := range []struct{ alg, signedWith string }{{EdDSA, EdDSA}, {ES256, RS256}, {HS256, RS256}} {
		t.Run(tt.alg, func(t *testing.T) {
			p, iss, clk := newProviderTokens(t, tt.alg)
			now := clk.Now().Truncate(time.Second)
			want := accessClaimsFor(now)
			token, err := p.IssueAccessToken(context.Background(), want)
			if err != nil {
				t.Fatal(err)
			}
			header := decodeSegment(t, token, 0)
			if string(header["typ"]) != `"at+jwt"` || string(header["alg"]) != `"`+tt.signedWith+`"` {
				t.Errorf("header %v, want typ at+jwt and alg %s", header, tt.signedWith)
			}
			payload := decodeSegment(t, token, 1)
			for k, v := range map[string]string{"iss": `"` + providerIssuer + `"`, "client_id": `"6b0000000000000000000002"`,
				"scope": `"openid email"`, "acr": `"aal2"`} {
				if string(payload[k]) != v {
					t.Errorf("%s = %s, want %s", k, payload[k], v)
				}
			}
			got, err := p.VerifyAccessToken(context.Background(), token)
			if err != nil {
				t.Fatalf("VerifyAccessToken: %v", err)
			}
			if got.Subject != want.Subject || got.ClientID != want.ClientID || !slices.Equal(got.Scopes, want.Scopes) ||
				got.SessionID != want.SessionID || !got.AuthTime.Equal(want.AuthTime) || !slices.Equal(got.AMR, want.AMR) {
				t.Errorf("verified %+v, want %+v", got, want)
			}
			// userd's own API does not take it.
			if _, err := iss.Verify(context.Background(), token); !errors.Is(err, domain.ErrInvalidToken) {
				t.Errorf("the API's verifier took a provider's access token: %v", err)
			}
		})
	}
}

// TestProviderTokens_refuse_what_they_did_not_make: an access token of
// userd's own API, an ID token, a token of another issuer, an expired one.
func TestProviderTokens_refuse_what_they_did_not_make(t *testing.T) {
	p, iss, clk := newProviderTokens(t, EdDSA)
	ctx := context.Background()
	now := clk.Now().Truncate(time.Second)
	own := issue(t, iss)
	idToken, err := p.IssueIDToken(ctx, domain.IDTokenClaims{Subject: "6a0000000000000000000001",
		ClientID: "6b0000000000000000000002", AuthTime: now, IssuedAt: now, ExpiresAt: now.Add(time.Minute)}, RS256, "")
	if err != nil {
		t.Fatal(err)
	}
	other := NewProviderTokens(iss, "https://elsewhere.example")
	foreign, err := other.IssueAccessToken(ctx, accessClaimsFor(now))
	if err != nil {
		t.Fatal(err)
	}
	expired := accessClaimsFor(now.Add(-time.Hour))
	old, err := p.IssueAccessToken(ctx, expired)
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range map[string]string{"userd_api_token": own, "id_token": idToken, "other_issuer": foreign,
		"expired": old, "garbage": "a.b.c"} {
		if _, err := p.VerifyAccessToken(ctx, token); !errors.Is(err, domain.ErrInvalidToken) {
			t.Errorf("%s: VerifyAccessToken = %v, want ErrInvalidToken", name, err)
		}
	}
}

// TestProviderTokens_id_token: the claims of the scopes, the nonce, and
// an at_hash of the access token by the algorithm's hash; the hint
// verifies even once expired.
func TestProviderTokens_id_token(t *testing.T) {
	p, iss, clk := newProviderTokens(t, EdDSA)
	ctx := context.Background()
	now := clk.Now().Truncate(time.Second)
	name, email, verified := "Ada", "ada@example.com", true
	c := domain.IDTokenClaims{Subject: "6a0000000000000000000001", ClientID: "6b0000000000000000000002", Nonce: "n-1",
		SessionID: "0123456789abcdef0123456789abcdef", AuthTime: now, AMR: domain.AMRPassword,
		IssuedAt: now, ExpiresAt: now.Add(domain.IDTokenTTL),
		User: domain.UserClaims{Name: &name, UpdatedAt: &now, Email: &email, EmailVerified: &verified}}
	for alg, sum := range map[string]func(string) []byte{
		RS256: func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:16] },
		EdDSA: func(s string) []byte { h := sha512.Sum512([]byte(s)); return h[:32] },
	} {
		token, err := p.IssueIDToken(ctx, c, alg, "the-access-token")
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		payload := decodeSegment(t, token, 1)
		var atHash string
		if err := json.Unmarshal(payload["at_hash"], &atHash); err != nil || atHash != base64.RawURLEncoding.EncodeToString(sum("the-access-token")) {
			t.Errorf("%s: at_hash %s", alg, payload["at_hash"])
		}
		for k, v := range map[string]string{"nonce": `"n-1"`, "aud": `["6b0000000000000000000002"]`, "name": `"Ada"`,
			"email": `"ada@example.com"`, "email_verified": "true", "acr": `"aal1"`, "amr": `["pwd"]`} {
			if string(payload[k]) != v {
				t.Errorf("%s: %s = %s, want %s", alg, k, payload[k], v)
			}
		}
		if _, ok := payload["profiles"]; ok {
			t.Errorf("%s: profiles without the scope", alg)
		}
		clk.Advance(time.Hour)
		hint, err := p.VerifyIDTokenHint(ctx, token)
		if err != nil || hint.Subject != c.Subject || hint.ClientID != c.ClientID || hint.SessionID != c.SessionID {
			t.Errorf("%s: expired hint = %+v, %v", alg, hint, err)
		}
		clk.Advance(-time.Hour)
	}
	if _, err := p.VerifyIDTokenHint(ctx, issue(t, iss)); !errors.Is(err, domain.ErrInvalidToken) {
		t.Errorf("an API access token passed as a hint: %v", err)
	}
}
