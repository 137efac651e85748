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
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/logbuf"
)

// Tests are named after the attack they defend against (TestAttack_…) or the
// rule they pin down (TestRule_…, TestRoundTrip); one test per attack.

// fakeKeyStore is a ports.KeyStore over a map, counting reads so that tests
// can see reloads.
type fakeKeyStore struct {
	mu    sync.Mutex
	keys  map[string]domain.SigningKey
	reads int
	err   error
}

var _ ports.KeyStore = (*fakeKeyStore)(nil)

func newFakeKeyStore() *fakeKeyStore {
	return &fakeKeyStore{keys: map[string]domain.SigningKey{}}
}

func (s *fakeKeyStore) Keys(_ context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	var out []domain.SigningKey
	for _, k := range s.keys {
		if k.Purpose == purpose {
			k.Secret = bytes.Clone(k.Secret)
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b domain.SigningKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

func (s *fakeKeyStore) AddKey(_ context.Context, k domain.SigningKey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("key %s: %w", k.ID, domain.ErrKeyExists)
	}
	k.Secret = bytes.Clone(k.Secret)
	s.keys[k.ID] = k
	return nil
}

func (s *fakeKeyStore) readCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

func (s *fakeKeyStore) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *fakeKeyStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

var testOpts = Options{Issuer: "userd", Audience: "userd-api"}

var allAlgorithms = []string{EdDSA, ES256, HS256}

var testUser = domain.User{
	ID:       "6740f1c2a1b2c3d4e5f60718",
	Email:    "ada@example.com",
	Profiles: domain.Profiles{domain.ProfileCustomer, domain.ProfileAdmin},
}

func optsFor(alg string) Options {
	o := testOpts
	o.Algorithm = alg
	return o
}

// newTestIssuer returns an EdDSA issuer over a fresh store at t0.
func newTestIssuer(t testing.TB) (*Issuer, *fakeKeyStore, *clock.Manual) {
	t.Helper()
	return newIssuerFor(t, EdDSA)
}

func newIssuerFor(t testing.TB, alg string) (*Issuer, *fakeKeyStore, *clock.Manual) {
	t.Helper()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	iss, err := New(context.Background(), store, clk, optsFor(alg))
	if err != nil {
		t.Fatal(err)
	}
	return iss, store, clk
}

func issue(t testing.TB, iss *Issuer) string {
	t.Helper()
	at, err := iss.Issue(context.Background(), testUser)
	if err != nil {
		t.Fatal(err)
	}
	return at.Token
}

// decodeSegment decodes part n (0 header, 1 payload) of a compact JWS.
func decodeSegment(t *testing.T, token string, n int) map[string]json.RawMessage {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts", len(parts))
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[n])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// claimsAt are the claims Issue would write at now, as a map so that tests
// can remove or change any of them.
func claimsAt(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss":      testOpts.Issuer,
		"aud":      testOpts.Audience,
		"sub":      string(testUser.ID),
		"iat":      now.Unix(),
		"nbf":      now.Unix(),
		"exp":      now.Add(DefaultTTL).Unix(),
		"jti":      "7d0c7c1e-4a53-4c0e-9d0a-1f2e3d4c5b6a",
		"profiles": []string{"ROLE_CUSTOMER"},
	}
}

func validClaims() jwt.MapClaims { return claimsAt(t0) }

// signRaw signs c with method and key under kid, then applies header (a nil
// value removes the parameter).
func signRaw(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.Claims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	tok.Header["kid"] = kid
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signWith signs claims with the issuer's current signing key, adding header
// to the JOSE header.
func signWith(t testing.TB, iss *Issuer, c jwt.Claims, header map[string]any) string {
	t.Helper()
	ks := iss.snapshot()
	return signRaw(t, iss.alg.method, ks.sign, ks.signKID, c, header)
}

func assertValid(t *testing.T, iss *Issuer, token string) {
	t.Helper()
	if _, err := iss.Verify(context.Background(), token); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func assertInvalid(t *testing.T, iss *Issuer, token string, reason error) {
	t.Helper()
	p, err := iss.Verify(context.Background(), token)
	if err == nil {
		t.Fatalf("Verify accepted the token: %+v", p)
	}
	if !errors.Is(err, domain.ErrInvalidToken) {
		t.Fatalf("error %v does not wrap domain.ErrInvalidToken", err)
	}
	if reason != nil && !errors.Is(err, reason) {
		t.Errorf("error %v does not wrap %v", err, reason)
	}
	for _, part := range strings.Split(token, ".") {
		if len(part) > 8 && strings.Contains(err.Error(), part) {
			t.Errorf("error %q contains part of the token", err)
		}
	}
	for _, e := range []error{domain.ErrInvalidID, domain.ErrInvalidProfile, domain.ErrUnavailable} {
		if errors.Is(err, e) {
			t.Errorf("error %v wraps %v, which would not map to 401", err, e)
		}
	}
}

// assertAlgorithmRejected checks that token was refused by the algorithm pin
// (jwt.WithValidMethods) itself, before any key was looked up, not by luck
// further down, such as a key of the wrong Go type.
func assertAlgorithmRejected(t *testing.T, iss *Issuer, token, alg string) {
	t.Helper()
	assertInvalid(t, iss, token, jwt.ErrTokenSignatureInvalid)
	_, err := iss.Verify(context.Background(), token)
	if want := fmt.Sprintf("signing method %s is invalid", alg); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v: not rejected by the algorithm pin (%q)", err, want)
	}
}

// rotate adds a key through Rotate at the clock's time and reloads iss.
func rotate(t *testing.T, iss *Issuer, store ports.KeyStore, clk ports.Clock) KeyInfo {
	t.Helper()
	info, err := Rotate(context.Background(), store, clk, iss.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return info
}

// ---------------------------------------------------------------------------
// Round trips and the shape of a token

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			at, err := iss.Issue(context.Background(), testUser)
			if err != nil {
				t.Fatal(err)
			}
			if want := t0.Add(15 * time.Minute); !at.ExpiresAt.Equal(want) {
				t.Errorf("ExpiresAt = %v, want %v", at.ExpiresAt, want)
			}

			p, err := iss.Verify(context.Background(), at.Token)
			if err != nil {
				t.Fatal(err)
			}
			want := domain.Principal{UserID: testUser.ID, Profiles: domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}}
			if p.UserID != want.UserID || !slices.Equal(p.Profiles, want.Profiles) {
				t.Errorf("principal = %+v, want %+v", p, want)
			}

			h := decodeSegment(t, at.Token, 0)
			if string(h["alg"]) != `"`+alg+`"` {
				t.Errorf("alg = %s, want %s", h["alg"], alg)
			}
			if string(h["kid"]) != fmt.Sprintf("%q", iss.snapshot().signKID) {
				t.Errorf("kid = %s, want %q", h["kid"], iss.snapshot().signKID)
			}

			c := decodeSegment(t, at.Token, 1)
			for claim, want := range map[string]string{
				"iss":      `"userd"`,
				"aud":      `"userd-api"`, // a string, not ["userd-api"]
				"sub":      `"6740f1c2a1b2c3d4e5f60718"`,
				"iat":      fmt.Sprint(t0.Unix()),
				"nbf":      fmt.Sprint(t0.Unix()),
				"exp":      fmt.Sprint(t0.Add(15 * time.Minute).Unix()),
				"profiles": `["ROLE_ADMIN","ROLE_CUSTOMER"]`,
			} {
				if got := string(c[claim]); got != want {
					t.Errorf("claim %s = %s, want %s", claim, got, want)
				}
			}
			var jti string
			if err := json.Unmarshal(c["jti"], &jti); err != nil || len(jti) != 36 || jti[14] != '4' {
				t.Errorf("jti = %s, want a version 4 UUID", c["jti"])
			}
			if at2 := issue(t, iss); string(decodeSegment(t, at2, 1)["jti"]) == string(c["jti"]) {
				t.Error("two tokens share a jti")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Attacks on the algorithm (RFC 8725, sections 2.1 and 3.1)

func TestAttack_alg_none_is_rejected(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			kid := iss.snapshot().signKID
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
			pub := ks.byKID[ks.signKID].verify
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
				s := signRaw(t, jwt.SigningMethodHS256, key, ks.signKID, validClaims(), nil)
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
				before, err := New(context.Background(), store, clk, optsFor(other))
				if err != nil {
					t.Fatal(err)
				}
				iss, err := New(context.Background(), store, clk, optsFor(configured))
				if err != nil {
					t.Fatal(err)
				}
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
	clk.Advance(missReloadInterval)
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
			old := iss.snapshot()
			clk.Advance(time.Hour)
			next := rotate(t, iss, store, clk)

			clk.Set(next.CreatedAt.Add(iss.opts.RetireAfter() + time.Second))
			forged := signRaw(t, iss.alg.method, old.sign, old.signKID, claimsAt(clk.Now()), nil)
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
			assertInvalid(t, iss, signRaw(t, iss.alg.method, sign, iss.snapshot().signKID, validClaims(), nil), jwt.ErrTokenSignatureInvalid)
		})
	}
}

// ---------------------------------------------------------------------------
// Attacks on the claims

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
	other, err := New(context.Background(), store, clk, Options{Issuer: testOpts.Issuer, Audience: "another-api"})
	if err != nil {
		t.Fatal(err)
	}
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

// ---------------------------------------------------------------------------
// Rules: keys, their storage, rotation and publication

func TestRule_keys_are_persisted_and_shared(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			first, store, clk := newIssuerFor(t, alg)
			if n := store.count(); n != 1 {
				t.Fatalf("store holds %d keys, want 1", n)
			}
			for _, k := range store.keys {
				if k.Purpose != domain.KeyPurposeAccessToken || k.Algorithm != alg || !k.CreatedAt.Equal(t0) || len(k.ID) != 16 {
					t.Errorf("stored key = %+v", k)
				}
				switch alg {
				case EdDSA:
					if _, err := parseEd25519(k.Secret); err != nil {
						t.Errorf("stored secret is not PKCS#8 Ed25519: %v", err)
					}
				case ES256:
					if _, err := parseP256(k.Secret); err != nil {
						t.Errorf("stored secret is not PKCS#8 P-256: %v", err)
					}
				case HS256:
					if len(k.Secret) != MinHMACKeyLen {
						t.Errorf("stored HMAC key has %d bytes, want %d", len(k.Secret), MinHMACKeyLen)
					}
				}
			}

			second, err := New(context.Background(), store, clk, optsFor(alg))
			if err != nil {
				t.Fatal(err)
			}
			if n := store.count(); n != 1 {
				t.Fatalf("second issuer added a key; store holds %d", n)
			}
			assertValid(t, second, issue(t, first))
			assertValid(t, first, issue(t, second))
		})
	}
}

// Keys of another algorithm in the store, even newer ones, are neither used
// to sign nor published.
func TestRule_keys_of_other_algorithms_are_ignored(t *testing.T) {
	t.Parallel()
	for _, configured := range allAlgorithms {
		t.Run(configured, func(t *testing.T) {
			t.Parallel()
			iss, store, clk := newIssuerFor(t, configured)
			own := iss.snapshot().signKID
			clk.Advance(time.Minute)
			var others []string
			for _, other := range allAlgorithms {
				if other != configured {
					k, err := Rotate(context.Background(), store, clk, optsFor(other))
					if err != nil {
						t.Fatal(err)
					}
					others = append(others, k.KID)
				}
			}
			if err := iss.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := iss.snapshot().signKID; got != own {
				t.Errorf("signing kid = %s, want %s, the only %s key", got, own, configured)
			}
			if got := string(decodeSegment(t, issue(t, iss), 0)["kid"]); got != `"`+own+`"` {
				t.Errorf("token kid = %s, want %q", got, own)
			}
			for _, k := range iss.JWKS().Keys {
				if slices.Contains(others, k.Kid) {
					t.Errorf("JWKS publishes %s, a key of another algorithm", k.Kid)
				}
			}
			if _, ok := iss.snapshot().byKID[others[0]]; ok {
				t.Error("a key of another algorithm is in the verification set")
			}
		})
	}
}

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
		want := map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": iss.snapshot().signKID}
		for name, v := range want {
			if k[name] != v {
				t.Errorf("%s = %q, want %q", name, k[name], v)
			}
		}
		if len(k) != 6 {
			t.Errorf("JWK has members %v, want exactly kty crv x kid alg use", k)
		}
		x := b64(t, k["x"])
		if !bytes.Equal(x, iss.snapshot().sign.(ed25519.PrivateKey).Public().(ed25519.PublicKey)) {
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
		want := map[string]string{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": iss.snapshot().signKID}
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
		pub, err := ecdsa.ParseUncompressedPublicKey(iss.snapshot().sign.(*ecdsa.PrivateKey).Curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			t.Fatal(err)
		}
		if !pub.Equal(iss.snapshot().sign.(*ecdsa.PrivateKey).Public()) {
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

// TestRule_rotation: after a rotation the new key signs, tokens of the old
// one still verify and both are published, until the old key retires
// reloadInterval+TTL+leeway after the new key was created; then it is gone
// from the JWK set and refused.
func TestRule_rotation(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, store, clk := newIssuerFor(t, alg)
			oldKID := iss.snapshot().signKID
			clk.Advance(10 * time.Minute)
			oldToken := issue(t, iss)

			next := rotate(t, iss, store, clk)
			if next.KID == oldKID || len(next.KID) != 16 || next.Algorithm != alg || next.Status != StatusActive {
				t.Fatalf("Rotate returned %+v", next)
			}
			newToken := issue(t, iss)
			if got := string(decodeSegment(t, newToken, 0)["kid"]); got != `"`+next.KID+`"` {
				t.Errorf("token kid after rotation = %s, want %q", got, next.KID)
			}
			assertValid(t, iss, newToken)
			assertValid(t, iss, oldToken)
			wantJWKS := []string{oldKID, next.KID}
			if alg == HS256 {
				wantJWKS = nil
			}
			jwksKIDs := func() []string {
				var kids []string
				for _, k := range iss.JWKS().Keys {
					kids = append(kids, k.Kid)
				}
				return kids
			}
			if got := jwksKIDs(); !slices.Equal(got, wantJWKS) {
				t.Errorf("JWKS after rotation = %v, want %v", got, wantJWKS)
			}

			// The old key's last token: signed just before this node's
			// next reload would have switched, valid until exp + leeway.
			retireAt := next.CreatedAt.Add(ReloadInterval + DefaultTTL + DefaultLeeway)
			clk.Set(next.CreatedAt.Add(ReloadInterval))
			sign, _, err := iss.alg.parse(store.keys[oldKID].Secret)
			if err != nil {
				t.Fatal(err)
			}
			lastOld := signRaw(t, iss.alg.method, sign, oldKID, claimsAt(clk.Now()), nil)
			// One second before, it still verifies (exp is in whole
			// seconds, and at exp+leeway exactly it has expired); at
			// retireAt the key is still published.
			clk.Set(retireAt.Add(-time.Second))
			assertValid(t, iss, lastOld)
			clk.Set(retireAt)
			if got := jwksKIDs(); !slices.Equal(got, wantJWKS) {
				t.Errorf("JWKS at the retirement time = %v, want %v", got, wantJWKS)
			}

			clk.Set(retireAt.Add(time.Second))
			if alg != HS256 {
				wantJWKS = []string{next.KID}
			}
			if got := jwksKIDs(); !slices.Equal(got, wantJWKS) {
				t.Errorf("JWKS after the retirement = %v, want %v", got, wantJWKS)
			}
			assertInvalid(t, iss, lastOld, errRetiredKID)
			assertValid(t, iss, issue(t, iss))
		})
	}
}

// TestRule_key_added_by_another_node_is_found_on_a_miss: a node that rotated
// signs with a key this node has not loaded yet; the unknown kid makes it
// reload (at most once per missReloadInterval).
func TestRule_key_added_by_another_node_is_found_on_a_miss(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	oldKID := iss.snapshot().signKID
	clk.Advance(time.Second)
	other, err := New(context.Background(), store, clk, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	next := rotate(t, other, store, clk)
	rotated := issue(t, other)

	assertValid(t, iss, rotated)
	if iss.snapshot().signKID != next.KID {
		t.Errorf("signing kid = %s, want the newest key", iss.snapshot().signKID)
	}
	if got := iss.JWKS().Keys; len(got) != 2 || got[0].Kid != oldKID || got[1].Kid != next.KID {
		t.Errorf("JWKS keys = %+v, want old then new", got)
	}
}

// eventually polls cond for up to two seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startRun runs iss.Run until the test ends, and checks that it returns.
func startRun(t *testing.T, iss *Issuer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		iss.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
}

// newRunningIssuer is an EdDSA issuer over store that reloads every 5 ms.
func newRunningIssuer(t *testing.T, store ports.KeyStore, clk ports.Clock, log *slog.Logger) *Issuer {
	t.Helper()
	opts := testOpts
	opts.reloadInterval = 5 * time.Millisecond
	opts.Logger = log
	iss, err := New(context.Background(), store, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	startRun(t, iss)
	return iss
}

func TestRule_periodic_reload_picks_up_a_key_from_another_issuer(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	var logs logbuf.Buffer
	iss := newRunningIssuer(t, store, clk, slog.New(slog.NewTextHandler(&logs, nil)))

	clk.Advance(time.Second)
	other, err := New(context.Background(), store, clk, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	next := rotate(t, other, store, clk)

	// No token with the new kid reaches iss: only the timer can load it.
	eventually(t, "the new key signs", func() bool { return iss.snapshot().signKID == next.KID })
	if n := len(iss.JWKS().Keys); n != 2 {
		t.Errorf("JWKS has %d keys, want 2", n)
	}
	if !strings.Contains(logs.String(), "signing key changed") || !strings.Contains(logs.String(), next.KID) {
		t.Errorf("the change of signing key was not logged: %s", logs.String())
	}
}

func TestRule_failed_periodic_reload_is_logged_and_keeps_the_keys(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	var logs logbuf.Buffer
	iss := newRunningIssuer(t, store, clk, slog.New(slog.NewTextHandler(&logs, nil)))
	before := iss.snapshot()

	store.setErr(fmt.Errorf("db down: %w", domain.ErrUnavailable))
	eventually(t, "a warning", func() bool { return strings.Contains(logs.String(), "level=WARN") })
	if !strings.Contains(logs.String(), "db down") {
		t.Errorf("warning does not say why: %s", logs.String())
	}
	if iss.snapshot() != before {
		t.Error("a failed reload replaced the key set")
	}
	assertValid(t, iss, issue(t, iss))
}

// A store outage while looking for an unknown kid is still a 401, and known
// keys need no store.
func TestRule_reload_failure_is_invalid_token(t *testing.T) {
	t.Parallel()
	iss, store, _ := newTestIssuer(t)
	store.setErr(fmt.Errorf("db down: %w", domain.ErrUnavailable))
	assertInvalid(t, iss, signWith(t, iss, validClaims(), map[string]any{"kid": "feedfacefeedface"}), errUnknownKID)
	assertValid(t, iss, issue(t, iss))
	if err := iss.Reload(context.Background()); err == nil {
		t.Error("Reload succeeded with the store down")
	}
}

// USERD_JWT_HMAC_SECRET: the key comes from the configuration, its kid is
// derived from it so nodes agree, the store is never touched, nothing is
// published, and a short secret refuses to start without showing it.
func TestRule_configured_hmac_secret(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef-configured")
	opts := optsFor(HS256)
	opts.HMACSecret = secret
	clk := clock.NewManual(t0)

	storeA, storeB := newFakeKeyStore(), newFakeKeyStore()
	a, err := New(context.Background(), storeA, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(context.Background(), storeB, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	token := issue(t, a)
	assertValid(t, b, token)
	if got, want := string(decodeSegment(t, token, 0)["kid"]), `"`+ConfiguredKID(secret)+`"`; got != want || len(want) != 18 {
		t.Errorf("kid = %s, want %s", got, want)
	}
	if ConfiguredKID(secret) == ConfiguredKID(append(slices.Clone(secret), 'x')) {
		t.Error("two secrets share a kid")
	}
	if storeA.readCount() != 0 || storeA.count() != 0 {
		t.Error("a configured secret read or wrote the store")
	}
	if got := string(a.JWKSJSON()); got != `{"keys":[]}` {
		t.Errorf("JWKS = %s", got)
	}
	if err := a.Reload(context.Background()); err != nil {
		t.Errorf("Reload: %v", err)
	}
	assertInvalid(t, a, signWith(t, a, validClaims(), map[string]any{"kid": "feedfacefeedface"}), errUnknownKID)

	// A token under the stored HS256 key of a store-backed node is refused.
	stored, _, _ := newIssuerFor(t, HS256)
	assertInvalid(t, a, issue(t, stored), errUnknownKID)

	if _, err := Rotate(context.Background(), storeA, clk, opts); !errors.Is(err, ErrConfiguredKey) {
		t.Errorf("Rotate = %v, want ErrConfiguredKey", err)
	}

	short := opts
	short.HMACSecret = []byte("only-31-bytes-long-secret-value")
	if _, err := New(context.Background(), storeA, clk, short); err == nil || strings.Contains(err.Error(), string(short.HMACSecret)) {
		t.Errorf("short secret: %v", err)
	}
	notHMAC := opts
	notHMAC.Algorithm = EdDSA
	if _, err := New(context.Background(), storeA, clk, notHMAC); err == nil || strings.Contains(err.Error(), string(secret)) {
		t.Errorf("secret with EdDSA: %v", err)
	}
}

func TestRule_list_keys_shows_status(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	ctx := context.Background()

	if keys, err := ListKeys(ctx, store, clk, testOpts); err != nil || len(keys) != 0 || store.count() != 0 {
		t.Fatalf("ListKeys on an empty store = %v, %v; store holds %d", keys, err, store.count())
	}
	first, err := Rotate(ctx, store, clk, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	ignored, err := Rotate(ctx, store, clk, optsFor(ES256))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	second, err := Rotate(ctx, store, clk, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	retireAt := second.CreatedAt.Add(ReloadInterval + DefaultTTL + DefaultLeeway)

	check := func(want ...KeyInfo) {
		t.Helper()
		got, err := ListKeys(ctx, store, clk, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b KeyInfo) bool {
			return a.KID == b.KID && a.Algorithm == b.Algorithm && a.CreatedAt.Equal(b.CreatedAt) &&
				a.Status == b.Status && a.RetiresAt.Equal(b.RetiresAt) && a.Configured == b.Configured
		}) {
			t.Errorf("ListKeys at %s:\n got %+v\nwant %+v", clk.Now().Format(time.TimeOnly), got, want)
		}
	}
	firstAt := func(s KeyStatus) KeyInfo {
		return KeyInfo{KID: first.KID, Algorithm: EdDSA, CreatedAt: first.CreatedAt, Status: s, RetiresAt: retireAt}
	}
	ignoredInfo := KeyInfo{KID: ignored.KID, Algorithm: ES256, CreatedAt: ignored.CreatedAt, Status: StatusIgnored}
	check(firstAt(StatusPublished), ignoredInfo, second)
	clk.Set(retireAt)
	check(firstAt(StatusPublished), ignoredInfo, second)
	clk.Set(retireAt.Add(time.Second))
	check(firstAt(StatusRetired), ignoredInfo, second)

	// Under HS256 with a configured secret, every stored key is ignored.
	opts := optsFor(HS256)
	opts.HMACSecret = bytes.Repeat([]byte("k"), 32)
	got, err := ListKeys(ctx, store, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !got[0].Configured || got[0].Status != StatusActive || got[0].KID != ConfiguredKID(opts.HMACSecret) {
		t.Fatalf("ListKeys with a configured secret = %+v", got)
	}
	for _, k := range got[1:] {
		if k.Status != StatusIgnored {
			t.Errorf("stored key %s is %s, want ignored", k.KID, k.Status)
		}
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(t0)
	for _, opts := range []Options{
		{Audience: "a"},
		{Issuer: "i"},
		{Issuer: "i", Audience: "a", TTL: -time.Second},
		{Issuer: "i", Audience: "a", Leeway: -time.Second},
		{Issuer: "i", Audience: "a", Algorithm: "RS256"},
		{Issuer: "i", Audience: "a", Algorithm: "none"},
		{Issuer: "i", Audience: "a", Algorithm: "eddsa"},
		{Issuer: "i", Audience: "a", Algorithm: HS256, HMACSecret: []byte{}},
	} {
		if _, err := New(context.Background(), newFakeKeyStore(), clk, opts); err == nil {
			t.Errorf("New(%+v) succeeded", opts)
		}
	}

	iss, err := New(context.Background(), newFakeKeyStore(), clk, Options{Issuer: "i", Audience: "a", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	at, err := iss.Issue(context.Background(), testUser)
	if err != nil {
		t.Fatal(err)
	}
	if !at.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("ExpiresAt = %v, want TTL of one hour", at.ExpiresAt)
	}
	if _, err := iss.Issue(context.Background(), domain.User{ID: "nope"}); err == nil {
		t.Error("Issue accepted a user without a valid id")
	}

	failing := newFakeKeyStore()
	failing.err = errors.New("boom")
	if _, err := New(context.Background(), failing, clk, testOpts); err == nil {
		t.Error("New succeeded with a failing store")
	}

	// A stored key of the configured algorithm that does not parse stops
	// the start rather than being skipped.
	broken := newFakeKeyStore()
	_ = broken.AddKey(context.Background(), domain.SigningKey{
		ID: "00000000000000aa", Purpose: domain.KeyPurposeAccessToken, Algorithm: ES256, Secret: []byte("junk"), CreatedAt: t0,
	})
	if _, err := New(context.Background(), broken, clk, optsFor(ES256)); err == nil || strings.Contains(err.Error(), "junk") {
		t.Errorf("New with a broken ES256 key: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	var wg sync.WaitGroup
	for n := range 8 {
		wg.Go(func() {
			for range 20 {
				at, err := iss.Issue(context.Background(), testUser)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := iss.Verify(context.Background(), at.Token); err != nil {
					t.Error(err)
					return
				}
				switch n % 4 {
				case 0:
					_ = iss.Reload(context.Background())
				case 1:
					if _, err := Rotate(context.Background(), store, clk, testOpts); err != nil {
						t.Error(err)
					}
				}
				_ = iss.JWKSJSON()
			}
		})
	}
	wg.Wait()
}

func BenchmarkIssue(b *testing.B) {
	for _, alg := range allAlgorithms {
		b.Run(alg, func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			for b.Loop() {
				if _, err := iss.Issue(ctx, testUser); err != nil {
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
