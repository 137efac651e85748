package jwtissuer

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestRule_jwks_per_algorithm(t *testing.T) {
	t.Parallel()
	decode := func(t *testing.T, iss *Issuer) []map[string]string {
		t.Helper()
		var doc struct {
			Keys []map[string]string `json:"keys"`
		}
		if err := json.Unmarshal(iss.JWKSJSON(), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Keys
	}
	b64 := func(t *testing.T, s string) []byte {
		t.Helper()
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// An outside verifier with nothing but the JWK accepts our token.
	outsideVerify := func(t *testing.T, iss *Issuer, alg string, key any) {
		t.Helper()
		_, err := jwt.Parse(issue(t, iss), func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{alg}), jwt.WithTimeFunc(func() time.Time { return t0 }))
		if err != nil {
			t.Errorf("token does not verify with the published key: %v", err)
		}
	}

	t.Run("EdDSA_is_OKP_Ed25519", func(t *testing.T) {
		t.Parallel()
		iss, _, _ := newIssuerFor(t, EdDSA)
		keys := decode(t, iss)
		if len(keys) != 1 {
			t.Fatalf("JWKS has %d keys, want 1", len(keys))
		}
		k := keys[0]
		want := map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": signer(iss).kid}
		for name, v := range want {
			if k[name] != v {
				t.Errorf("%s = %q, want %q", name, k[name], v)
			}
		}
		if len(k) != 6 {
			t.Errorf("JWK has members %v, want exactly kty crv x kid alg use", k)
		}
		x := b64(t, k["x"])
		if !bytes.Equal(x, signer(iss).sign.(ed25519.PrivateKey).Public().(ed25519.PublicKey)) {
			t.Error("x is not the signing key's public key")
		}
		outsideVerify(t, iss, EdDSA, ed25519.PublicKey(x))
	})

	t.Run("ES256_is_EC_P256", func(t *testing.T) {
		t.Parallel()
		iss, _, _ := newIssuerFor(t, ES256)
		keys := decode(t, iss)
		if len(keys) != 1 {
			t.Fatalf("JWKS has %d keys, want 1", len(keys))
		}
		k := keys[0]
		want := map[string]string{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": signer(iss).kid}
		for name, v := range want {
			if k[name] != v {
				t.Errorf("%s = %q, want %q", name, k[name], v)
			}
		}
		if len(k) != 7 {
			t.Errorf("JWK has members %v, want exactly kty crv x y kid alg use", k)
		}
		x, y := b64(t, k["x"]), b64(t, k["y"])
		if len(x) != 32 || len(y) != 32 {
			t.Fatalf("x and y have %d and %d bytes, want 32", len(x), len(y))
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(signer(iss).sign.(*ecdsa.PrivateKey).Curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatal(err)
		}
		if !pub.Equal(signer(iss).sign.(*ecdsa.PrivateKey).Public()) {
			t.Error("x, y are not the signing key's public key")
		}
		outsideVerify(t, iss, ES256, pub)
	})

	t.Run("HS256_is_an_empty_set", func(t *testing.T) {
		t.Parallel()
		iss, store, _ := newIssuerFor(t, HS256)
		if got := string(iss.JWKSJSON()); got != `{"keys":[]}` {
			t.Errorf("JWKS = %s, want an empty set", got)
		}
		for _, k := range store.keys {
			for _, enc := range []string{base64.RawURLEncoding.EncodeToString(k.Secret), base64.StdEncoding.EncodeToString(k.Secret)} {
				if strings.Contains(string(iss.JWKSJSON()), enc) {
					t.Error("the JWKS shows the HMAC key")
				}
			}
		}
	})
}
