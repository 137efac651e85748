package jwtissuer

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

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

func (s *fakeKeyStore) Keys(_ context.Context, purpose string) ([]domain.SigningKey, error) {
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
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("key %s exists", k.ID)
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

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

var testOpts = Options{Issuer: "userd", Audience: "userd-api"}

var testUser = domain.User{
	ID:       "6740f1c2a1b2c3d4e5f60718",
	Email:    "ada@example.com",
	Profiles: domain.Profiles{domain.ProfileCustomer, domain.ProfileAdmin},
}

func newTestIssuer(t testing.TB) (*Issuer, *fakeKeyStore, *clock.Manual) {
	t.Helper()
	store, clock := newFakeKeyStore(), clock.NewManual(t0)
	iss, err := New(context.Background(), store, clock, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	return iss, store, clock
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

// validClaims are the claims Issue would write at t0, as a map so that tests
// can remove or change any of them.
func validClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss":      testOpts.Issuer,
		"aud":      testOpts.Audience,
		"sub":      string(testUser.ID),
		"iat":      t0.Unix(),
		"nbf":      t0.Unix(),
		"exp":      t0.Add(DefaultTTL).Unix(),
		"jti":      "7d0c7c1e-4a53-4c0e-9d0a-1f2e3d4c5b6a",
		"profiles": []string{"ROLE_CUSTOMER"},
	}
}

// signWith signs claims with the issuer's current signing key, adding header
// to the JOSE header.
func signWith(t *testing.T, iss *Issuer, c jwt.Claims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = iss.snapshot().signKID
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(iss.snapshot().signKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
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

func TestIssueVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
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
	if string(h["alg"]) != `"EdDSA"` {
		t.Errorf("alg = %s", h["alg"])
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
}

func TestExpiryAndLeeway(t *testing.T) {
	t.Parallel()
	iss, _, clock := newTestIssuer(t)
	token := issue(t, iss)
	exp := t0.Add(DefaultTTL)

	clock.Set(exp.Add(29 * time.Second))
	if _, err := iss.Verify(context.Background(), token); err != nil {
		t.Errorf("29 s after exp: %v, want accepted within leeway", err)
	}
	clock.Set(exp.Add(31 * time.Second))
	assertInvalid(t, iss, token, jwt.ErrTokenExpired)
}

func TestNotYetValid(t *testing.T) {
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

func TestWrongIssuerOrAudience(t *testing.T) {
	t.Parallel()
	iss, store, clock := newTestIssuer(t)
	token := issue(t, iss)

	for _, opts := range []Options{
		{Issuer: "someone-else", Audience: testOpts.Audience},
		{Issuer: testOpts.Issuer, Audience: "another-api"},
	} {
		other, err := New(context.Background(), store, clock, opts)
		if err != nil {
			t.Fatal(err)
		}
		assertInvalid(t, other, token, jwt.ErrTokenInvalidClaims)
	}
}

func TestClaimProblems(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	tests := []struct {
		name   string
		edit   func(jwt.MapClaims)
		reason error
	}{
		{"missing_exp", func(c jwt.MapClaims) { delete(c, "exp") }, jwt.ErrTokenRequiredClaimMissing},
		{"missing_nbf", func(c jwt.MapClaims) { delete(c, "nbf") }, jwt.ErrTokenRequiredClaimMissing},
		{"missing_iat", func(c jwt.MapClaims) { delete(c, "iat") }, errMissingIAT},
		{"missing_iss", func(c jwt.MapClaims) { delete(c, "iss") }, jwt.ErrTokenRequiredClaimMissing},
		{"missing_aud", func(c jwt.MapClaims) { delete(c, "aud") }, jwt.ErrTokenRequiredClaimMissing},
		{"aud_array", func(c jwt.MapClaims) { c["aud"] = []string{testOpts.Audience} }, jwt.ErrTokenMalformed},
		{"aud_array_of_two", func(c jwt.MapClaims) { c["aud"] = []string{testOpts.Audience, "x"} }, jwt.ErrTokenMalformed},
		{"exp_as_string", func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, jwt.ErrTokenMalformed},
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

func TestHeaderProblems(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	jwk := map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}
	tests := []struct {
		name   string
		header map[string]any
		reason error
	}{
		{"jku", map[string]any{"jku": "https://evil.example/jwks.json"}, errForbiddenHeader},
		{"jwk", map[string]any{"jwk": jwk}, errForbiddenHeader},
		{"x5u", map[string]any{"x5u": "https://evil.example/cert.pem"}, errForbiddenHeader},
		{"x5c", map[string]any{"x5c": []string{"MIIB"}}, errForbiddenHeader},
		{"crit", map[string]any{"crit": []string{"exp"}}, errForbiddenHeader},
		{"missing_kid", map[string]any{"kid": nil}, errMissingKID},
		{"empty_kid", map[string]any{"kid": ""}, errMissingKID},
		{"numeric_kid", map[string]any{"kid": 7}, errMissingKID},
		{"unknown_kid", map[string]any{"kid": "0123456789abcdef"}, errUnknownKID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Correctly signed by our own key: only the header is wrong.
			assertInvalid(t, iss, signWith(t, iss, validClaims(), tt.header), tt.reason)
		})
	}
}

func TestAlgorithmConfusion(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	kid := iss.snapshot().signKID
	pub := iss.snapshot().byKID[kid].pub

	t.Run("none", func(t *testing.T) {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, validClaims())
		tok.Header["kid"] = kid
		s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		assertInvalid(t, iss, s, jwt.ErrTokenSignatureInvalid)
	})

	// The classic confusion: HMAC keyed with the public key, which anyone
	// can fetch from the JWK set.
	for _, key := range [][]byte{pub, []byte(base64.RawURLEncoding.EncodeToString(pub))} {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims())
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		assertInvalid(t, iss, s, jwt.ErrTokenSignatureInvalid)
	}
}

func TestTampering(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	token := issue(t, iss)
	parts := strings.Split(token, ".")

	// A customer promoting itself: same header and signature, new payload.
	c := validClaims()
	c["profiles"] = []string{"ROLE_ADMIN"}
	payload, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
	assertInvalid(t, iss, forged, jwt.ErrTokenSignatureInvalid)

	// One flipped bit in the middle of the signature.
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)/2] ^= 1
	assertInvalid(t, iss, parts[0]+"."+parts[1]+"."+base64.RawURLEncoding.EncodeToString(sig), jwt.ErrTokenSignatureInvalid)

	// A valid token signed by some other Ed25519 key under our kid.
	_, otherKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, validClaims())
	tok.Header["kid"] = iss.snapshot().signKID
	s, err := tok.SignedString(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	assertInvalid(t, iss, s, jwt.ErrTokenSignatureInvalid)

	for _, garbage := range []string{"", "abc", "a.b.c", token + ".x", parts[0] + "." + parts[1]} {
		assertInvalid(t, iss, garbage, nil)
	}
}

func TestKeyPersistedAndShared(t *testing.T) {
	t.Parallel()
	first, store, clock := newTestIssuer(t)
	if n := len(store.keys); n != 1 {
		t.Fatalf("store holds %d keys, want 1", n)
	}
	for _, k := range store.keys {
		if k.Purpose != domain.KeyPurposeAccessToken || k.Algorithm != "EdDSA" || !k.CreatedAt.Equal(t0) {
			t.Errorf("stored key = %+v", k)
		}
		if _, err := parsePrivateKey(k.Secret); err != nil {
			t.Errorf("stored secret is not PKCS#8 Ed25519: %v", err)
		}
	}

	second, err := New(context.Background(), store, clock, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(store.keys) != 1 {
		t.Fatalf("second issuer added a key; store holds %d", len(store.keys))
	}
	if _, err := second.Verify(context.Background(), issue(t, first)); err != nil {
		t.Errorf("second issuer rejects the first's token: %v", err)
	}
	if _, err := first.Verify(context.Background(), issue(t, second)); err != nil {
		t.Errorf("first issuer rejects the second's token: %v", err)
	}
}

// TestKeyAddedByAnotherNode: a node that rotated signs with a key this node
// has not loaded yet; the unknown kid makes it reload, at most once per
// missReloadInterval.
func TestKeyAddedByAnotherNode(t *testing.T) {
	t.Parallel()
	iss, store, clock := newTestIssuer(t)
	oldKID := iss.snapshot().signKID

	// An unknown kid reloads once, then not again until the interval passed.
	reads := store.readCount()
	bogus := signWith(t, iss, validClaims(), map[string]any{"kid": "feedfacefeedface"})
	assertInvalid(t, iss, bogus, errUnknownKID)
	assertInvalid(t, iss, bogus, errUnknownKID)
	if got := store.readCount() - reads; got != 1 {
		t.Fatalf("store read %d times for two unknown kids, want 1", got)
	}

	// Another node adds a newer key and signs with it.
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	err = store.AddKey(context.Background(), domain.SigningKey{
		ID: "0000000000000002", Purpose: domain.KeyPurposeAccessToken, Algorithm: "EdDSA",
		Secret: der, CreatedAt: t0.Add(time.Second),
	})
	if err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, validClaims())
	tok.Header["kid"] = "0000000000000002"
	rotated, err := tok.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}

	// Still inside the interval of the bogus kid's reload.
	assertInvalid(t, iss, rotated, errUnknownKID)

	clock.Set(t0.Add(missReloadInterval))
	if _, err := iss.Verify(context.Background(), rotated); err != nil {
		t.Fatalf("token of the new key after the interval: %v", err)
	}
	// The old key still verifies, the newest signs, both are published.
	if iss.snapshot().signKID != "0000000000000002" {
		t.Errorf("signing kid = %s, want the newest key", iss.snapshot().signKID)
	}
	if got := iss.JWKS().Keys; len(got) != 2 || got[0].Kid != oldKID || got[1].Kid != "0000000000000002" {
		t.Errorf("JWKS keys = %+v, want old then new", got)
	}
}

func TestReloadFailureIsInvalidToken(t *testing.T) {
	t.Parallel()
	iss, store, _ := newTestIssuer(t)
	store.mu.Lock()
	store.err = fmt.Errorf("db down: %w", domain.ErrUnavailable)
	store.mu.Unlock()
	assertInvalid(t, iss, signWith(t, iss, validClaims(), map[string]any{"kid": "feedfacefeedface"}), errUnknownKID)
	// Known keys need no store.
	if _, err := iss.Verify(context.Background(), issue(t, iss)); err != nil {
		t.Errorf("Verify with the store down: %v", err)
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	var doc struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(iss.JWKSJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Keys) != 1 {
		t.Fatalf("JWKS has %d keys, want 1", len(doc.Keys))
	}
	k := doc.Keys[0]
	want := map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": iss.snapshot().signKID}
	for name, v := range want {
		if k[name] != v {
			t.Errorf("%s = %q, want %q", name, k[name], v)
		}
	}
	if len(k) != 6 {
		t.Errorf("JWK has members %v, want exactly kty crv x kid alg use", k)
	}
	x, err := base64.RawURLEncoding.DecodeString(k["x"])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, iss.snapshot().signKey.Public().(ed25519.PublicKey)) {
		t.Error("x is not the signing key's public key")
	}

	// An outside verifier with nothing but the JWK set accepts our token.
	token := issue(t, iss)
	_, err = jwt.Parse(token, func(*jwt.Token) (any, error) { return ed25519.PublicKey(x), nil },
		jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithTimeFunc(func() time.Time { return t0 }))
	if err != nil {
		t.Errorf("token does not verify with the published key: %v", err)
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	clock := clock.NewManual(t0)
	for _, opts := range []Options{
		{Audience: "a"},
		{Issuer: "i"},
		{Issuer: "i", Audience: "a", TTL: -time.Second},
		{Issuer: "i", Audience: "a", Leeway: -time.Second},
	} {
		if _, err := New(context.Background(), newFakeKeyStore(), clock, opts); err == nil {
			t.Errorf("New(%+v) succeeded", opts)
		}
	}

	iss, err := New(context.Background(), newFakeKeyStore(), clock, Options{Issuer: "i", Audience: "a", TTL: time.Hour})
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
	if _, err := New(context.Background(), failing, clock, testOpts); err == nil {
		t.Error("New succeeded with a failing store")
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
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
				if n%2 == 0 {
					_ = iss.Reload(context.Background())
				}
				_ = iss.JWKSJSON()
			}
		})
	}
	wg.Wait()
}

func BenchmarkIssue(b *testing.B) {
	iss, _, _ := newTestIssuer(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := iss.Issue(ctx, testUser); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	iss, _, _ := newTestIssuer(b)
	ctx := context.Background()
	token := issue(b, iss)
	for b.Loop() {
		if _, err := iss.Verify(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
