package jwtissuer

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
)

func BenchmarkIssue(b *testing.B) {
	for _, alg := range allAlgorithms {
		b.Run(alg, func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			for b.Loop() {
				if _, err := iss.Issue(ctx, testUser, testSession, domain.HookClaims{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range allAlgorithms {
		b.Run(alg, func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			token := issue(b, iss)
			for b.Loop() {
				// The full verification, as for a token seen the first time.
				iss.verified = newVerifiedCache()
				if _, err := iss.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(alg+"/cached", func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			token := issue(b, iss)
			for b.Loop() {
				if _, err := iss.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The read path of the load test: every request verifies a token
		// seen before, from many goroutines, over a few thousand users.
		b.Run(alg+"/cached_parallel", func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			tokens := make([]string, 1000)
			for n := range tokens {
				tokens[n] = issue(b, iss)
				if _, err := iss.Verify(ctx, tokens[n]); err != nil {
					b.Fatal(err)
				}
			}
			var seed atomic.Uint32
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				n := int(seed.Add(7919))
				for pb.Next() {
					n++
					if _, err := iss.Verify(ctx, tokens[n%len(tokens)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkProviderSign is the signature of an ID token by the OpenID
// provider's key, at the RSA sizes weighed for ProviderKeyBits, beside the
// Ed25519 access-token key; the figures are in ProviderKeyBits' comment.
func BenchmarkProviderSign(b *testing.B) {
	for _, bc := range []struct {
		name string
		alg  string
		bits int
	}{{"RS256_2048", RS256, 2048}, {"RS256_3072", RS256, 3072}, {"EdDSA", EdDSA, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			store, clk := newFakeKeyStore(), clock.NewManual(t0)
			if bc.bits != 0 {
				storeRSAKey(b, store, bc.bits)
			}
			opts := testOpts
			opts.OIDCProvider = true
			kid, key, err := startIssuer(b, store, clk, opts).ProviderKeys().SigningKey(bc.alg)
			if err != nil {
				b.Fatal(err)
			}
			c := jwt.MapClaims{"iss": "http://localhost:8080", "sub": string(testUser.ID), "aud": "6740f1c2a1b2c3d4e5f60719",
				"exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix(), "auth_time": t0.Unix(), "nonce": "n-0S6_WzA2Mj",
				"acr": "aal1", "amr": []string{"pwd"}, "sid": testSession.ID, "at_hash": "77QmUPtjPfzWtF2AnpK9RQ"}
			method := jwt.GetSigningMethod(bc.alg)
			for b.Loop() {
				// As ProviderTokens.sign signs.
				tok := jwt.NewWithClaims(method, c)
				tok.Header["kid"] = kid
				signing, err := tok.SigningString()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := signature(method, signing, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProviderKeyGeneration is the making of an RSA key of each size
// weighed for ProviderKeyBits, which a rotation does while its caller
// waits.
func BenchmarkProviderKeyGeneration(b *testing.B) {
	for _, bits := range []int{2048, 3072} {
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := rsa.GenerateKey(rand.Reader, bits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeClaims prices the claims of a token of ours decoded by
// decodeOwnClaims and by json.Unmarshal.
func BenchmarkDecodeClaims(b *testing.B) {
	iss, _, _ := newTestIssuer(b)
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(issue(b, iss), ".")[1])
	if err != nil {
		b.Fatal(err)
	}
	b.Run("own", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := decodeOwnClaims(payload); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c claims
			if err := json.Unmarshal(payload, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
