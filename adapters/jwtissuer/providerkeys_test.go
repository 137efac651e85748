package jwtissuer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
)

// ---------------------------------------------------------------------------
// Rules: the OpenID provider's RS256 keys beside the access-token keys

// providerOpts are optsFor(alg) with the OpenID provider on.
func providerOpts(alg string) Options {
	o := optsFor(alg)
	o.OIDCProvider = true
	return o
}

// publicKey is one call of ProviderKeys.PublicKeys.
type publicKey struct {
	kid, alg string
	key      crypto.PublicKey
}

func publicKeys(p *ProviderKeys) []publicKey {
	var out []publicKey
	p.PublicKeys(func(kid, alg string, key crypto.PublicKey) { out = append(out, publicKey{kid, alg, key}) })
	return out
}

func publicKIDs(p *ProviderKeys) []string {
	var kids []string
	for _, k := range publicKeys(p) {
		kids = append(kids, k.kid)
	}
	return kids
}

// signingKID is the kid of ProviderKeys.SigningKey(alg), which must succeed.
func signingKID(t *testing.T, p *ProviderKeys, alg string) string {
	t.Helper()
	kid, _, err := p.SigningKey(alg)
	if err != nil {
		t.Fatalf("SigningKey(%s): %v", alg, err)
	}
	return kid
}

// signIDToken signs a token as the provider would: with the crypto.Signer
// of SigningKey(alg), through golang-jwt (go-jose is the provider's).
func signIDToken(t *testing.T, p *ProviderKeys, alg string) (string, string) {
	t.Helper()
	kid, key, err := p.SigningKey(alg)
	if err != nil {
		t.Fatalf("SigningKey(%s): %v", alg, err)
	}
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), jwt.RegisteredClaims{Subject: string(testUser.ID), Audience: jwt.ClaimStrings{"client"}})
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s, kid
}

// verifyWithJWKS verifies token as a relying party that has nothing but
// the JWK set: the key of the token's kid, of the token's alg.
func verifyWithJWKS(t *testing.T, iss *Issuer, token string) {
	t.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(iss.JWKSJSON(), &set); err != nil {
		t.Fatal(err)
	}
	_, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
		for _, k := range set.Keys {
			if k["kid"] != tok.Header["kid"] || k["alg"] != tok.Header["alg"] {
				continue
			}
			switch k["kty"] {
			case "RSA":
				n, errN := base64.RawURLEncoding.DecodeString(k["n"])
				e, errE := base64.RawURLEncoding.DecodeString(k["e"])
				if errN != nil || errE != nil {
					t.Fatalf("JWK %v: n or e is not base64url", k)
				}
				return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
			case "OKP":
				x, err := base64.RawURLEncoding.DecodeString(k["x"])
				return ed25519.PublicKey(x), err
			}
		}
		return nil, jwt.ErrTokenUnverifiable
	}, jwt.WithValidMethods([]string{RS256, EdDSA}))
	if err != nil {
		t.Errorf("the token does not verify with the JWK set: %v", err)
	}
}

// Whatever signs access tokens, the provider on means one RS256 key of
// its own, made at first start, stored under its purpose, of
// ProviderKeyBits, published beside the access-token keys, and shared by
// the nodes (a second one adds none).
func TestRule_provider_key_is_made_at_first_start_beside_the_access_token_key(t *testing.T) {
	t.Parallel()
	configured := providerOpts(HS256)
	configured.HMACSecret = []byte("0123456789abcdef0123456789abcdef-configured")
	for name, opts := range map[string]Options{EdDSA: providerOpts(EdDSA), ES256: providerOpts(ES256),
		HS256: providerOpts(HS256), "HS256_configured": configured} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store, clk := newFakeKeyStore(), clock.NewManual(t0)
			iss := startIssuer(t, store, clk, opts)
			oidc, err := store.Keys(context.Background(), domain.KeyPurposeOIDC)
			if err != nil || len(oidc) != 1 {
				t.Fatalf("the provider's keys in the store: %+v, %v; want one", oidc, err)
			}
			k := oidc[0]
			priv, err := parseRSA(k.Secret)
			if err != nil || priv.N.BitLen() != ProviderKeyBits || k.Algorithm != RS256 || len(k.ID) != 16 || !k.CreatedAt.Equal(t0) {
				t.Fatalf("the provider's key: %s %s %v (%v)", k.ID, k.Algorithm, k.CreatedAt, err)
			}
			wantAccess := 1
			if opts.HMACSecret != nil {
				wantAccess = 0
			}
			if access, _ := store.Keys(context.Background(), domain.KeyPurposeAccessToken); len(access) != wantAccess {
				t.Errorf("%d access-token keys stored, want %d", len(access), wantAccess)
			}

			var jwks []JWK
			for _, j := range iss.JWKS().Keys {
				if j.Kty == "RSA" {
					jwks = append(jwks, j)
				}
			}
			if len(jwks) != 1 || jwks[0].Kid != k.ID || jwks[0].Alg != RS256 || jwks[0].Use != "sig" || jwks[0].E != "AQAB" ||
				jwks[0].Crv != "" || jwks[0].X != "" {
				t.Errorf("the JWK set's RSA keys: %+v, want the one of kid %s", jwks, k.ID)
			}
			if got := iss.JWKS().Keys; opts.Algorithm != HS256 && (len(got) != 2 || got[0].Kid != signer(iss).kid) {
				t.Errorf("JWKS %+v, want the access-token key then the provider's", got)
			}
			token, _ := signIDToken(t, iss.ProviderKeys(), RS256)
			verifyWithJWKS(t, iss, token)
			if strings.Contains(string(iss.JWKSJSON()), `"d"`) {
				t.Error("the JWK set holds a private member")
			}

			startIssuer(t, store, clk, opts)
			if oidc, _ := store.Keys(context.Background(), domain.KeyPurposeOIDC); len(oidc) != 1 {
				t.Errorf("a second node added a key: %d", len(oidc))
			}
		})
	}
}

// USERD_OIDC_PROVIDER=false: no RSA key is made, loaded or published, and
// the provider's view has nothing, even when another node made one.
func TestRule_provider_off_makes_and_publishes_no_rsa_key(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	off := startIssuer(t, store, clk, testOpts)
	if oidc, _ := store.Keys(context.Background(), domain.KeyPurposeOIDC); len(oidc) != 0 {
		t.Fatalf("the provider off made %d keys", len(oidc))
	}
	on := startIssuer(t, store, clk, providerOpts(EdDSA))
	if err := off.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := off.JWKS().Keys; len(got) != 1 || got[0].Kty != "OKP" {
		t.Errorf("JWKS with the provider off = %+v, want the Ed25519 key alone", got)
	}
	p := off.ProviderKeys()
	if _, _, err := p.SigningKey(RS256); err == nil {
		t.Error("SigningKey(RS256) with the provider off succeeded")
	}
	if _, _, err := p.SigningKey(EdDSA); err == nil {
		t.Error("SigningKey(EdDSA) with the provider off succeeded")
	}
	if got := publicKeys(p); len(got) != 0 || len(p.Algorithms()) != 0 {
		t.Errorf("the provider off has keys %v and algorithms %v", got, p.Algorithms())
	}
	list, err := newKeyManager(t, store, clk, testOpts).List(context.Background())
	if err != nil || len(list) != 2 || list[1].Purpose != domain.KeyPurposeOIDC || list[1].Status != domain.KeyIgnored ||
		list[1].KID != signingKID(t, on.ProviderKeys(), RS256) {
		t.Errorf("List with the provider off = %+v, %v; want the RSA key ignored", list, err)
	}
}

// SigningKey per algorithm: RS256 is the provider's own key, EdDSA the
// access tokens' when they are EdDSA, anything else is refused; the
// signer signs what the published key verifies.
func TestRule_provider_signing_key_per_algorithm(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	notStarted, err := New(store, clk, providerOpts(EdDSA))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := notStarted.ProviderKeys().SigningKey(RS256); err == nil {
		t.Error("SigningKey before Start succeeded")
	}

	iss := startIssuer(t, store, clk, providerOpts(EdDSA))
	p := iss.ProviderKeys()
	if got := p.Algorithms(); !slices.Equal(got, []string{RS256, EdDSA}) {
		t.Errorf("Algorithms = %v, want RS256 then EdDSA", got)
	}
	kid, key, err := p.SigningKey(RS256)
	if _, isRSA := key.(*rsa.PrivateKey); err != nil || !isRSA || kid == signer(iss).kid {
		t.Fatalf("SigningKey(RS256) = %s %T %v", kid, key, err)
	}
	kid, key, err = p.SigningKey(EdDSA)
	if _, isEd := key.(ed25519.PrivateKey); err != nil || !isEd || kid != signer(iss).kid {
		t.Fatalf("SigningKey(EdDSA) = %s %T %v, want the access-token key %s", kid, key, err, signer(iss).kid)
	}
	for _, alg := range []string{RS256, EdDSA} {
		token, _ := signIDToken(t, p, alg)
		verifyWithJWKS(t, iss, token)
	}
	for _, alg := range []string{ES256, HS256, "none", "PS256", ""} {
		if _, _, err := p.SigningKey(alg); err == nil {
			t.Errorf("SigningKey(%q) succeeded", alg)
		}
	}

	es := startIssuer(t, newFakeKeyStore(), clk, providerOpts(ES256))
	if got := es.ProviderKeys().Algorithms(); !slices.Equal(got, []string{RS256}) {
		t.Errorf("Algorithms under ES256 = %v, want RS256 alone", got)
	}
	if _, _, err := es.ProviderKeys().SigningKey(EdDSA); err == nil {
		t.Error("SigningKey(EdDSA) under ES256 succeeded")
	}
	got := publicKeys(es.ProviderKeys())
	if len(got) != 2 || got[0].alg != ES256 || got[1].alg != RS256 {
		t.Fatalf("PublicKeys under ES256 = %+v", got)
	}
	if _, ok := got[0].key.(*ecdsa.PublicKey); !ok {
		t.Errorf("the ES256 public key is a %T", got[0].key)
	}
	if pub, ok := got[1].key.(*rsa.PublicKey); !ok || pub.N.BitLen() != ProviderKeyBits {
		t.Errorf("the RS256 public key is a %T", got[1].key)
	}
}

// storeRSAKey stores an RSA key of bits as the provider's, active from t0.
func storeRSAKey(t testing.TB, store *fakeKeyStore, bits int) {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, bits) //nolint:gosec // G403: tests weigh and refuse short keys
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AddKey(context.Background(), domain.SigningKey{ID: fmt.Sprintf("%016x", bits), Purpose: domain.KeyPurposeOIDC,
		Algorithm: RS256, Secret: der, CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
}

// A stored RSA key shorter than MinRSAKeyBits is refused, not used.
func TestAttack_short_rsa_key_in_the_store_is_refused(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	storeRSAKey(t, store, 1024)
	iss, err := New(store, clk, providerOpts(EdDSA))
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "1024 bits") {
		t.Errorf("Start with a 1024-bit key = %v, want it refused", err)
	}
}
