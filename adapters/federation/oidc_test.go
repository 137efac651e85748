package federation_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"github.com/userd/userd/adapters/federation"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

const callbackURI = "https://userd.example/auth/idp/corp/callback"

// newClient returns an adapter on the fake issuer's clock, and its log.
func newClient(f *fakeIssuer) (*federation.Client, *bytes.Buffer) {
	var logs bytes.Buffer
	c := federation.New(federation.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Clock:  f.clock,
	})
	return c, &logs
}

// oidcProvider is the provider of the fake issuer.
func oidcProvider(f *fakeIssuer) domain.IdentityProvider {
	return domain.IdentityProvider{
		Slug: "corp", DisplayName: "Corp", Kind: domain.IdentityProviderOIDC,
		Issuer: f.issuer(), ClientID: issuerClientID, ClientSecret: issuerClientSecret,
		Scopes: domain.DefaultOIDCProviderScopes, Enabled: true,
		UpdatedAt: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC),
	}
}

// newFlow is a flow's secrets, as the application makes them.
func newFlow() ports.FederationRequest {
	return ports.FederationRequest{
		RedirectURI: callbackURI, State: randomString(), Nonce: randomString(), CodeVerifier: oauth2.GenerateVerifier(),
	}
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// signIn runs a flow against the fake issuer: the authorization URL, the
// provider's answer with the nonce it was sent, the exchange of a code.
func signIn(t *testing.T, c *federation.Client, f *fakeIssuer, p domain.IdentityProvider) (domain.ExternalIdentity, ports.FederationRequest, url.Values, error) {
	t.Helper()
	req := newFlow()
	raw, err := c.AuthCodeURL(context.Background(), p, req)
	if err != nil {
		t.Fatalf("AuthCodeURL: %v", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	f.set(func(f *fakeIssuer) { f.nonce = q.Get("nonce") })
	id, err := c.Exchange(context.Background(), p, req, "code-"+randomString())
	return id, req, q, err
}

// TestOIDC_sign_in: the authorization URL carries the flow (client,
// scopes, redirect, state, nonce, S256 challenge), the verifier reaches
// the token endpoint, and the ID token's claims make the identity.
func TestOIDC_sign_in(t *testing.T) {
	f := newFakeIssuer(t)
	c, logs := newClient(f)
	id, req, q, err := signIn(t, c, f, oidcProvider(f))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	want := domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", EmailVerified: true, Name: "Jane Doe"}
	if id != want {
		t.Errorf("identity = %+v, want %+v", id, want)
	}
	for name, value := range map[string]string{
		"client_id": issuerClientID, "redirect_uri": callbackURI, "state": req.State, "nonce": req.Nonce,
		"response_type": "code", "code_challenge_method": "S256", "code_challenge": s256(req.CodeVerifier),
		"scope": "openid email profile",
	} {
		if got := q.Get(name); got != value {
			t.Errorf("authorization URL %s = %q, want %q", name, got, value)
		}
	}
	f.set(func(f *fakeIssuer) {
		if f.verifier != req.CodeVerifier {
			t.Errorf("the token endpoint received the verifier %q, want the flow's", f.verifier)
		}
	})
	if logs.Len() != 0 {
		t.Errorf("a sign-in that succeeded logged %q", logs.String())
	}
}

// TestOIDC_scopes: a provider set without "openid" still asks for it,
// or no ID token would come; one without scopes asks for the defaults.
func TestOIDC_scopes(t *testing.T) {
	for _, tc := range []struct {
		scopes []string
		want   string
	}{
		{[]string{"email"}, "openid email"},
		{[]string{"openid", "email", "groups"}, "openid email groups"},
		{nil, "openid email profile"},
	} {
		f := newFakeIssuer(t)
		c, _ := newClient(f)
		p := oidcProvider(f)
		p.Scopes = tc.scopes
		_, _, q, err := signIn(t, c, f, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Get("scope"); got != tc.want {
			t.Errorf("scopes %q: scope = %q, want %q", tc.scopes, got, tc.want)
		}
	}
}

// TestOIDC_refusals: each failed check is refused with its reason, and
// neither the refusal nor the log shows the code, a token or the secret.
func TestOIDC_refusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(f *fakeIssuer)
		want   string
	}{
		{"wrong_issuer", withClaims(func(c jwt.MapClaims) { c["iss"] = "https://other.example" }), domain.RefusedIssuerMismatch},
		{"wrong_audience", withClaims(func(c jwt.MapClaims) { c["aud"] = []string{"another-client"} }), domain.RefusedAudienceMismatch},
		{"expired", withClaims(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), domain.RefusedTokenExpired},
		{"wrong_nonce", withClaims(func(c jwt.MapClaims) { c["nonce"] = "another-flow" }), domain.RefusedNonceMismatch},
		{"no_nonce", withClaims(func(c jwt.MapClaims) { delete(c, "nonce") }), domain.RefusedNonceMismatch},
		{"no_sub", withClaims(func(c jwt.MapClaims) { delete(c, "sub") }), domain.RefusedInvalidProfile},
		{"foreign_key", func(f *fakeIssuer) {
			f.idToken = func(nonce string) string { return f.sign(f.claims(nonce), foreignKey()) }
		}, domain.RefusedInvalidSignature},
		{"hs256_under_the_secret", func(f *fakeIssuer) {
			f.idToken = func(nonce string) string {
				signed, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, f.claims(nonce)).SignedString([]byte(issuerClientSecret))
				return signed
			}
		}, domain.RefusedInvalidSignature},
		{"not_a_jwt", func(f *fakeIssuer) {
			f.idToken = func(string) string { return "not.a.jwt" }
		}, domain.RefusedInvalidIDToken},
		{"keys_down", func(f *fakeIssuer) { f.keysStatus = http.StatusServiceUnavailable }, domain.RefusedProviderUnreachable},
		{"token_endpoint_refuses", func(f *fakeIssuer) { f.tokenStatus = http.StatusBadRequest }, domain.RefusedCodeExchange},
		{"token_endpoint_fails", func(f *fakeIssuer) { f.tokenStatus = http.StatusBadGateway }, domain.RefusedProviderUnreachable},
		{"no_id_token", func(f *fakeIssuer) { f.idToken = nil }, domain.RefusedCodeExchange},
		{"userinfo_fails", func(f *fakeIssuer) {
			withClaims(func(c jwt.MapClaims) { delete(c, "email") })(f)
			f.userinfoStatus = http.StatusInternalServerError
		}, domain.RefusedProviderUnreachable},
		{"userinfo_refuses", func(f *fakeIssuer) {
			withClaims(func(c jwt.MapClaims) { delete(c, "email") })(f)
			f.userinfoStatus = http.StatusForbidden
		}, domain.RefusedInvalidProfile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeIssuer(t)
			f.set(tc.change)
			c, logs := newClient(f)
			id, _, _, err := signIn(t, c, f, oidcProvider(f))
			if got := domain.FederationReason(err); got != tc.want {
				t.Fatalf("reason = %q (%v), want %q", got, err, tc.want)
			}
			t.Logf("refused: %v", err)
			if id != (domain.ExternalIdentity{}) {
				t.Errorf("a refusal returned the identity %+v", id)
			}
			var code string
			f.set(func(f *fakeIssuer) { code = f.code })
			for what, text := range map[string]string{"error": err.Error(), "log": logs.String()} {
				if secret, ok := containsAny(text, code, issuerClientSecret, issuerAccessToken, "eyJ"); ok {
					t.Errorf("the %s shows %q: %s", what, secret, text)
				}
			}
			if !strings.Contains(logs.String(), "reason="+tc.want) || !strings.Contains(logs.String(), "provider=corp") {
				t.Errorf("log = %q, want the slug and the reason", logs.String())
			}
		})
	}
}

// withClaims shapes the next ID token's claims.
func withClaims(change func(jwt.MapClaims)) func(f *fakeIssuer) {
	return func(f *fakeIssuer) {
		f.idToken = func(nonce string) string {
			claims := f.claims(nonce)
			change(claims)
			return f.sign(claims, f.key)
		}
	}
}

// TestOIDC_discovery_down_then_back: a provider whose discovery fails is
// unreachable, and works on the next try once it is back: the failure is
// not kept.
func TestOIDC_discovery_down_then_back(t *testing.T) {
	f := newFakeIssuer(t)
	c, _ := newClient(f)
	p := oidcProvider(f)
	f.set(func(f *fakeIssuer) { f.discoveryStatus = http.StatusServiceUnavailable })
	_, err := c.AuthCodeURL(context.Background(), p, newFlow())
	if got := domain.FederationReason(err); got != domain.RefusedProviderUnreachable {
		t.Fatalf("AuthCodeURL with discovery down: reason %q (%v), want %q", got, err, domain.RefusedProviderUnreachable)
	}
	_, err = c.Exchange(context.Background(), p, newFlow(), "a-code")
	if got := domain.FederationReason(err); got != domain.RefusedProviderUnreachable {
		t.Fatalf("Exchange with discovery down: reason %q (%v), want %q", got, err, domain.RefusedProviderUnreachable)
	}

	f.set(func(f *fakeIssuer) { f.discoveryStatus = 0 })
	if _, _, _, err := signIn(t, c, f, p); err != nil {
		t.Fatalf("sign-in once discovery is back: %v", err)
	}
}

// TestOIDC_unreachable_issuer: an issuer nobody answers at is
// unreachable.
func TestOIDC_unreachable_issuer(t *testing.T) {
	f := newFakeIssuer(t)
	c, _ := newClient(f)
	p := oidcProvider(f)
	f.srv.Close()
	_, err := c.AuthCodeURL(context.Background(), p, newFlow())
	if got := domain.FederationReason(err); got != domain.RefusedProviderUnreachable {
		t.Fatalf("reason %q (%v), want %q", got, err, domain.RefusedProviderUnreachable)
	}
}

// TestOIDC_discovery_of_another_issuer: a discovery document naming
// another issuer is refused.
func TestOIDC_discovery_of_another_issuer(t *testing.T) {
	f := newFakeIssuer(t)
	f.set(func(f *fakeIssuer) { f.discoveryIssuer = "https://elsewhere.example" })
	c, _ := newClient(f)
	_, err := c.AuthCodeURL(context.Background(), oidcProvider(f), newFlow())
	if got := domain.FederationReason(err); got != domain.RefusedIssuerMismatch {
		t.Fatalf("reason %q (%v), want %q", got, err, domain.RefusedIssuerMismatch)
	}
}

// TestOIDC_discovery_cache: discovery is read once per provider and
// settings, again when the provider's UpdatedAt, issuer or client moves,
// and again after an hour.
func TestOIDC_discovery_cache(t *testing.T) {
	f := newFakeIssuer(t)
	c, _ := newClient(f)
	p := oidcProvider(f)
	discoveries := func() int {
		var n int
		f.set(func(f *fakeIssuer) { n = f.discoveries })
		return n
	}
	authorize := func(p domain.IdentityProvider) {
		t.Helper()
		if _, err := c.AuthCodeURL(context.Background(), p, newFlow()); err != nil {
			t.Fatal(err)
		}
	}

	authorize(p)
	authorize(p)
	if _, _, _, err := signIn(t, c, f, p); err != nil {
		t.Fatal(err)
	}
	if n := discoveries(); n != 1 {
		t.Errorf("discoveries after three uses = %d, want 1", n)
	}

	p.UpdatedAt = p.UpdatedAt.Add(time.Second)
	authorize(p)
	if n := discoveries(); n != 2 {
		t.Errorf("discoveries after a change of UpdatedAt = %d, want 2", n)
	}
	p.ClientID = "renamed"
	authorize(p)
	if n := discoveries(); n != 3 {
		t.Errorf("discoveries after a change of client = %d, want 3", n)
	}

	f.clock.Advance(59 * time.Minute)
	authorize(p)
	if n := discoveries(); n != 3 {
		t.Errorf("discoveries within the hour = %d, want 3", n)
	}
	f.clock.Advance(2 * time.Minute)
	authorize(p)
	if n := discoveries(); n != 4 {
		t.Errorf("discoveries after the hour = %d, want 4", n)
	}
}

// TestOIDC_claims: email_verified as a string, Entra's xms_edov, an email only in
// userinfo (taken when its sub is the token's), preferred_username for a
// missing name, and an address userd cannot hold.
func TestOIDC_claims(t *testing.T) {
	for _, tc := range []struct {
		name     string
		claims   func(jwt.MapClaims)
		userinfo map[string]any
		want     domain.ExternalIdentity
	}{
		{
			name:   "email_verified_as_string",
			claims: func(c jwt.MapClaims) { c["email_verified"] = "true" },
			want:   domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", EmailVerified: true, Name: "Jane Doe"},
		},
		{
			name:   "email_verified_false_string",
			claims: func(c jwt.MapClaims) { c["email_verified"] = "false" },
			want:   domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", Name: "Jane Doe"},
		},
		{
			name:   "email_verified_missing",
			claims: func(c jwt.MapClaims) { delete(c, "email_verified") },
			want:   domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", Name: "Jane Doe"},
		},
		{
			// Microsoft Entra ID: no email_verified, the optional claim
			// xms_edov instead.
			name: "entra_domain_owner_verified",
			claims: func(c jwt.MapClaims) {
				delete(c, "email_verified")
				c["xms_edov"] = true
			},
			want: domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", EmailVerified: true, Name: "Jane Doe"},
		},
		{
			name: "preferred_username",
			claims: func(c jwt.MapClaims) {
				delete(c, "name")
				c["preferred_username"] = "jdoe"
			},
			want: domain.ExternalIdentity{Subject: "248289761001", Email: "jane.doe@example.com", EmailVerified: true, Name: "jdoe"},
		},
		{
			name:   "unparsable_email",
			claims: func(c jwt.MapClaims) { c["email"] = "Jane Doe <jane@example.com>" },
			want:   domain.ExternalIdentity{Subject: "248289761001", Name: "Jane Doe"},
		},
		{
			name:     "email_from_userinfo",
			claims:   func(c jwt.MapClaims) { delete(c, "email"); delete(c, "email_verified") },
			userinfo: map[string]any{"sub": "248289761001", "email": "jane@corp.example", "email_verified": "true"},
			want:     domain.ExternalIdentity{Subject: "248289761001", Email: "jane@corp.example", EmailVerified: true, Name: "Jane Doe"},
		},
		{
			name:     "userinfo_of_another_subject",
			claims:   func(c jwt.MapClaims) { delete(c, "email"); delete(c, "email_verified") },
			userinfo: map[string]any{"sub": "someone-else", "email": "mallory@corp.example", "email_verified": true},
			want:     domain.ExternalIdentity{Subject: "248289761001", Name: "Jane Doe"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeIssuer(t)
			f.set(withClaims(tc.claims))
			f.set(func(f *fakeIssuer) { f.userinfo = tc.userinfo })
			c, _ := newClient(f)
			id, _, _, err := signIn(t, c, f, oidcProvider(f))
			if err != nil {
				t.Fatal(err)
			}
			if id != tc.want {
				t.Errorf("identity = %+v, want %+v", id, tc.want)
			}
		})
	}
}

// TestOIDC_userinfo_failure: a token without an email whose userinfo
// cannot be read is refused, not taken for an identity without one.
func TestOIDC_userinfo_failure(t *testing.T) {
	f := newFakeIssuer(t)
	f.set(withClaims(func(c jwt.MapClaims) { delete(c, "email") }))
	f.set(func(f *fakeIssuer) { f.userinfo = map[string]any{"sub": []string{"not", "a", "string"}} })
	c, _ := newClient(f)
	_, _, _, err := signIn(t, c, f, oidcProvider(f))
	if got := domain.FederationReason(err); got != domain.RefusedInvalidProfile {
		t.Fatalf("reason %q (%v), want %q", got, err, domain.RefusedInvalidProfile)
	}
}

// TestOIDC_client_secret_post: a provider that takes the client's
// secret in the form alone, as its metadata says, gets it there (the
// fake refuses the other way).
func TestOIDC_client_secret_post(t *testing.T) {
	f := newFakeIssuer(t)
	f.set(func(f *fakeIssuer) { f.secretInForm = true })
	c, _ := newClient(f)
	if _, _, _, err := signIn(t, c, f, oidcProvider(f)); err != nil {
		t.Fatal(err)
	}
}
