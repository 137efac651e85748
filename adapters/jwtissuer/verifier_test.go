package jwtissuer

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
)

// ---------------------------------------------------------------------------
// Attacks on the algorithm (RFC 8725, sections 2.1 and 3.1)

func TestAttack_alg_none_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			kid := signer(iss).kid
			none := signRaw(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, validClaims(), nil)
			assertAlgorithmRejected(t, iss, none, "none")
			// Other spellings are not even a known method.
			for _, alg := range []string{"None", "NONE", ""} {
				s := signRaw(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, validClaims(), map[string]any{"alg": alg})
				assertInvalid(t, iss, s, jwt.ErrTokenUnverifiable)
			}
		})
	}
}

// The classic key confusion: HMAC keyed with the public key, which anyone can
// fetch from the JWK set, in every encoding a naive verifier might use.
func TestAttack_hs256_signed_with_the_public_key_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{EdDSA, ES256} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			ks := iss.snapshot()
			pub := ks.byKID[signer(iss).kid].verify
			pkix, err := x509.MarshalPKIXPublicKey(pub)
			if err != nil {
				t.Fatal(err)
			}
			candidates := [][]byte{
				pkix,
				pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}),
				iss.JWKSJSON(),
			}
			jwk := iss.JWKS().Keys[0]
			candidates = append(candidates, []byte(jwk.X))
			switch pub := pub.(type) {
			case ed25519.PublicKey:
				candidates = append(candidates, pub)
			case *ecdsa.PublicKey:
				point, err := pub.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				candidates = append(candidates, point, point[1:])
			}
			for n, key := range candidates {
				s := signRaw(t, jwt.SigningMethodHS256, key, signer(iss).kid, validClaims(), nil)
				t.Run(fmt.Sprint(n), func(t *testing.T) { assertAlgorithmRejected(t, iss, s, HS256) })
			}
		})
	}
}

// A token genuinely signed by a key of another algorithm that sits in the
// same store (left from before a change of USERD_JWT_ALGORITHM) is refused:
// only the configured algorithm is accepted.
func TestAttack_token_of_another_algorithm_is_rejected(t *testing.T) {
	t.Parallel()
	for _, configured := range allAlgorithms {
		for _, other := range allAlgorithms {
			if other == configured {
				continue
			}
			name := fmt.Sprintf("%s_token_rejected_when_%s_configured", strings.ToLower(other), strings.ToLower(configured))
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				store, clk := newFakeKeyStore(), clock.NewManual(t0)
				before := startIssuer(t, store, clk, optsFor(other))
				iss := startIssuer(t, store, clk, optsFor(configured))
				assertAlgorithmRejected(t, iss, issue(t, before), other)
			})
		}
	}
}

// ---------------------------------------------------------------------------
// Attacks through the JOSE header (RFC 8725, section 3.10; RFC 7515, 4.1)

// assertHeaderRejected: a token correctly signed by our own key, with only
// the header parameter name added, is refused for every algorithm.
func assertHeaderRejected(t *testing.T, name string, value any) {
	t.Helper()
	for _, alg := range allAlgorithms {
		iss, _, _ := newIssuerFor(t, alg)
		s := signWith(t, iss, validClaims(), map[string]any{name: value})
		t.Run(alg, func(t *testing.T) { assertInvalid(t, iss, s, errForbiddenHeader) })
	}
}

func TestAttack_jku_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "jku", "https://evil.example/jwks.json")
}

func TestAttack_jwk_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "jwk", map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"})
}

func TestAttack_x5u_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "x5u", "https://evil.example/cert.pem")
}

func TestAttack_x5c_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "x5c", []string{"MIIB"})
}

func TestAttack_x5t_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "x5t", "dGh1bWJwcmludA")
	assertHeaderRejected(t, "x5t#S256", "dGh1bWJwcmludA")
}

func TestAttack_crit_header_is_rejected(t *testing.T) {
	t.Parallel()
	assertHeaderRejected(t, "crit", []string{"exp"})
}

// ---------------------------------------------------------------------------
// Attacks through the kid

func TestAttack_unknown_kid_is_rejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header map[string]any
		reason error
	}{
		{"unknown_kid", map[string]any{"kid": "0123456789abcdef"}, errUnknownKID},
		{"missing_kid", map[string]any{"kid": nil}, errMissingKID},
		{"empty_kid", map[string]any{"kid": ""}, errMissingKID},
		{"numeric_kid", map[string]any{"kid": 7}, errMissingKID},
	}
	for _, alg := range allAlgorithms {
		iss, _, _ := newIssuerFor(t, alg)
		for _, tt := range tests {
			t.Run(alg+"/"+tt.name, func(t *testing.T) {
				// Correctly signed by our own key: only the kid is wrong.
				assertInvalid(t, iss, signWith(t, iss, validClaims(), tt.header), tt.reason)
			})
		}
	}
}

// A flood of forged kids must not become a flood of store queries: an
// unknown kid re-reads the store at most once per missReloadInterval.
func TestAttack_unknown_kid_flood_reads_the_store_at_most_every_5s(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	reads := store.readCount()
	for n := range 50 {
		bogus := signWith(t, iss, validClaims(), map[string]any{"kid": fmt.Sprintf("feedface%08x", n)})
		assertInvalid(t, iss, bogus, errUnknownKID)
	}
	if got := store.readCount() - reads; got != 1 {
		t.Fatalf("store read %d times for 50 unknown kids, want 1", got)
	}
	clk.Advance(missReloadInterval - time.Millisecond)
	assertInvalid(t, iss, signWith(t, iss, validClaims(), map[string]any{"kid": "feedfacefeedfac0"}), errUnknownKID)
	if got := store.readCount() - reads; got != 1 {
		t.Fatalf("store read %d times before the interval was over, want 1", got)
	}
	clk.Advance(time.Millisecond)
	assertInvalid(t, iss, signWith(t, iss, validClaims(), map[string]any{"kid": "feedfacefeedface"}), errUnknownKID)
	if got := store.readCount() - reads; got != 2 {
		t.Fatalf("store read %d times after the interval, want 2", got)
	}
}

// ---------------------------------------------------------------------------
// Attacks with a key that is no longer trusted

// A retired key, should it leak, signs nothing we accept: a token made with
// it now, with fresh claims, is refused without a store query.
func TestAttack_token_signed_by_retired_key_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, store, clk := newIssuerFor(t, alg)
			old := signer(iss)
			clk.Advance(time.Hour)
			next := rotate(t, iss, store, clk)

			clk.Set(next.ActiveFrom.Add(iss.opts.RetireAfter() + time.Second))
			forged := signRaw(t, iss.alg.method, old.sign, old.kid, claimsAt(clk.Now()), nil)
			reads := store.readCount()
			assertInvalid(t, iss, forged, errRetiredKID)
			if store.readCount() != reads {
				t.Error("a retired kid made the issuer read the store")
			}
			// The current key still works at that time.
			assertValid(t, iss, issue(t, iss))
		})
	}
}

// A token signed with some other key of our algorithm, under our kid.
func TestAttack_foreign_key_under_our_kid_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			secret, err := algorithms[alg].generate()
			if err != nil {
				t.Fatal(err)
			}
			sign, _, err := algorithms[alg].parse(secret)
			if err != nil {
				t.Fatal(err)
			}
			assertInvalid(t, iss, signRaw(t, iss.alg.method, sign, signer(iss).kid, validClaims(), nil), jwt.ErrTokenSignatureInvalid)
		})
	}
}

// ---------------------------------------------------------------------------
// Attacks on the claims

// ---------------------------------------------------------------------------
// Attacks with a token that is not an access token of ours

// RFC 9068, section 4: a JWT that does not say it is an access token (an ID
// token, any other JWT signed with the same key) is refused, whatever its
// claims. The two spellings the RFC names pass, in any letter case (media
// types are case-insensitive, RFC 7515 section 4.1.9).
func TestAttack_token_without_access_token_typ_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			for _, typ := range []any{nil, "JWT", "jwt", "", "id+jwt", "at+jwt ", "at+jwt;x=1", "application/jwt", "at", 1, []string{"at+jwt"}} {
				assertInvalid(t, iss, signWith(t, iss, validClaims(), map[string]any{"typ": typ}), errWrongType)
			}
			for _, typ := range []string{"at+jwt", "AT+JWT", "application/at+jwt", "Application/At+JWT"} {
				assertValid(t, iss, signWith(t, iss, validClaims(), map[string]any{"typ": typ}))
			}
		})
	}
}

// A token made with a leaked key to live for years must not outlive the
// key's retirement, nor every session end: no token of ours lives longer
// than the TTL, the leeway allowing for a node whose clock differs.
func TestAttack_token_living_longer_than_the_ttl_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	for _, life := range []time.Duration{DefaultTTL + DefaultLeeway + time.Second, time.Hour, 10 * 365 * 24 * time.Hour} {
		c := validClaims()
		c["exp"] = t0.Add(life).Unix()
		assertInvalid(t, iss, signWith(t, iss, c, nil), errLongLifetime)
	}
	// iat counts, not nbf: a token issued in the past is no exception.
	c := validClaims()
	c["iat"] = t0.Add(-time.Hour).Unix()
	c["exp"] = t0.Add(time.Minute).Unix()
	assertInvalid(t, iss, signWith(t, iss, c, nil), errLongLifetime)

	c = validClaims()
	c["exp"] = t0.Add(DefaultTTL + DefaultLeeway).Unix()
	assertValid(t, iss, signWith(t, iss, c, nil))

	// The bound follows the configured TTL.
	opts := testOpts
	opts.TTL = time.Hour
	long := startIssuer(t, newFakeKeyStore(), clock.NewManual(t0), opts)
	c = validClaims()
	c["exp"] = t0.Add(time.Hour).Unix()
	assertValid(t, long, signWith(t, long, c, nil))
	c["exp"] = t0.Add(2 * time.Hour).Unix()
	assertInvalid(t, long, signWith(t, long, c, nil), errLongLifetime)
}

func TestAttack_expired_token_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, clk := newTestIssuer(t)
	token := issue(t, iss)
	exp := t0.Add(DefaultTTL)

	clk.Set(exp.Add(29 * time.Second))
	if _, err := iss.Verify(context.Background(), token); err != nil {
		t.Errorf("29 s after exp: %v, want accepted within the 30 s leeway", err)
	}
	clk.Set(exp.Add(31 * time.Second))
	assertInvalid(t, iss, token, jwt.ErrTokenExpired)
}

func TestAttack_token_used_before_nbf_or_iat_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)

	c := validClaims()
	c["nbf"] = t0.Add(time.Minute).Unix()
	assertInvalid(t, iss, signWith(t, iss, c, nil), jwt.ErrTokenNotValidYet)

	c = validClaims()
	c["iat"] = t0.Add(time.Minute).Unix()
	assertInvalid(t, iss, signWith(t, iss, c, nil), jwt.ErrTokenUsedBeforeIssued)

	// Within the leeway, a clock a little ahead of ours is fine.
	c = validClaims()
	c["nbf"] = t0.Add(20 * time.Second).Unix()
	c["iat"] = t0.Add(20 * time.Second).Unix()
	if _, err := iss.Verify(context.Background(), signWith(t, iss, c, nil)); err != nil {
		t.Errorf("nbf 20 s ahead: %v", err)
	}
}

func TestAttack_missing_required_claim_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	tests := []struct {
		claim  string
		reason error
	}{
		{"exp", jwt.ErrTokenRequiredClaimMissing},
		{"nbf", jwt.ErrTokenRequiredClaimMissing},
		{"iat", errMissingIAT},
		{"iss", jwt.ErrTokenRequiredClaimMissing},
		{"aud", jwt.ErrTokenRequiredClaimMissing},
	}
	for _, tt := range tests {
		t.Run(tt.claim, func(t *testing.T) {
			t.Parallel()
			c := validClaims()
			delete(c, tt.claim)
			assertInvalid(t, iss, signWith(t, iss, c, nil), tt.reason)
		})
	}
	c := validClaims()
	c["exp"] = "tomorrow"
	assertInvalid(t, iss, signWith(t, iss, c, nil), jwt.ErrTokenMalformed)
}

// aud must be a single string (the contract): an array, even one holding
// our audience, is malformed.
func TestAttack_aud_array_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	for _, aud := range [][]string{{testOpts.Audience}, {testOpts.Audience, "x"}, {"x", testOpts.Audience}} {
		c := validClaims()
		c["aud"] = aud
		assertInvalid(t, iss, signWith(t, iss, c, nil), jwt.ErrTokenMalformed)
	}
}

// A token made for another issuer under the same keys is refused.
func TestAttack_wrong_issuer_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	c := validClaims()
	c["iss"] = "someone-else"
	assertInvalid(t, iss, signWith(t, iss, c, nil), jwt.ErrTokenInvalidIssuer)
}

// A token made for another service under the same keys is refused.
func TestAttack_wrong_audience_is_rejected(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	other := startIssuer(t, store, clk, Options{Issuer: testOpts.Issuer, Audience: "another-api"})
	assertInvalid(t, other, issue(t, iss), jwt.ErrTokenInvalidAudience)
}

func TestAttack_bad_sub_or_profiles_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	tests := []struct {
		name   string
		edit   func(jwt.MapClaims)
		reason error
	}{
		{"missing_sub", func(c jwt.MapClaims) { delete(c, "sub") }, errBadSubject},
		{"sub_not_an_id", func(c jwt.MapClaims) { c["sub"] = "admin" }, errBadSubject},
		{"sub_upper_case", func(c jwt.MapClaims) { c["sub"] = strings.ToUpper(string(testUser.ID)) }, errBadSubject},
		{"missing_profiles", func(c jwt.MapClaims) { delete(c, "profiles") }, errBadProfiles},
		{"unknown_profile", func(c jwt.MapClaims) { c["profiles"] = []string{"ROLE_ROOT"} }, errBadProfiles},
		{"profiles_not_a_list", func(c jwt.MapClaims) { c["profiles"] = "ROLE_ADMIN" }, jwt.ErrTokenMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validClaims()
			tt.edit(c)
			assertInvalid(t, iss, signWith(t, iss, c, nil), tt.reason)
		})
	}
}

// ---------------------------------------------------------------------------
// Attacks on the signature and the encoding

// A customer promoting itself: same header and signature, new payload.
func TestAttack_tampered_payload_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		iss, _, _ := newIssuerFor(t, alg)
		parts := strings.Split(issue(t, iss), ".")
		c := validClaims()
		c["profiles"] = []string{"ROLE_ADMIN"}
		payload, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
		t.Run(alg, func(t *testing.T) { assertInvalid(t, iss, forged, jwt.ErrTokenSignatureInvalid) })
	}
}

func TestAttack_tampered_signature_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		iss, _, _ := newIssuerFor(t, alg)
		parts := strings.Split(issue(t, iss), ".")
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil {
			t.Fatal(err)
		}
		sig[len(sig)/2] ^= 1
		forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(sig)
		t.Run(alg, func(t *testing.T) { assertInvalid(t, iss, forged, jwt.ErrTokenSignatureInvalid) })
	}
}

// One token, many spellings: flipping an unused low bit of the signature's
// last base64url character decodes to the same bytes unless decoding is
// strict, which would let a token dodge anything keyed on its exact text.
func TestAttack_non_canonical_base64_is_rejected(t *testing.T) {
	t.Parallel()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, alg := range allAlgorithms {
		iss, _, _ := newIssuerFor(t, alg)
		token := issue(t, iss)
		last := strings.IndexByte(alphabet, token[len(token)-1])
		respelled := token[:len(token)-1] + string(alphabet[last^1])
		// The same signature bytes, read leniently.
		lenient, err := base64.RawURLEncoding.DecodeString(strings.Split(respelled, ".")[2])
		if err != nil {
			t.Fatal(err)
		}
		strict, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[2])
		if !bytes.Equal(lenient, strict) {
			t.Fatalf("%s: the respelled signature decodes differently; the test is broken", alg)
		}
		t.Run(alg, func(t *testing.T) { assertInvalid(t, iss, respelled, jwt.ErrTokenMalformed) })
	}
}

func TestAttack_malformed_token_is_rejected(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	token := issue(t, iss)
	parts := strings.Split(token, ".")
	for _, garbage := range []string{
		"", "abc", "a.b.c", "..", token + ".x", parts[0] + "." + parts[1], parts[0] + "." + parts[1] + ".",
		" " + token, token + "=", parts[0] + "." + parts[1] + ".+" + parts[2][1:], // "+" is not base64url
	} {
		assertInvalid(t, iss, garbage, nil)
	}
}
