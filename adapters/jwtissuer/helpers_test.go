package jwtissuer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// testSession is the session the tests' tokens belong to: a password and
// a TOTP code.
var testSession = domain.Session{ID: "0123456789abcdef0123456789abcdef",
	AuthTime: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), AMR: domain.AMRPasswordOTP}

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
	iss := startIssuer(t, store, clk, optsFor(alg))
	return iss, store, clk
}

// startIssuer returns a started Issuer.
func startIssuer(t testing.TB, store ports.KeyStore, clk ports.Clock, opts Options) *Issuer {
	t.Helper()
	iss, err := New(store, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return iss
}

func issue(t testing.TB, iss *Issuer) string {
	t.Helper()
	at, err := iss.Issue(context.Background(), testUser, testSession, domain.HookClaims{})
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

// signRaw signs c with method and key under kid and typ at+jwt, then
// applies header (a nil value removes the parameter).
func signRaw(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.Claims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	tok.Header["typ"] = TokenType
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
	k := signer(iss)
	return signRaw(t, iss.alg.method, k.sign, k.kid, c, header)
}

// signer is the key that iss signs with at its clock's time.
func signer(iss *Issuer) verificationKey {
	return iss.snapshot().signer(iss.clock.Now())
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

// newKeyManager returns a KeyManager over store.
func newKeyManager(t testing.TB, store ports.KeyStore, clk ports.Clock, opts Options) *KeyManager {
	t.Helper()
	m, err := NewKeyManager(store, clk, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rotate adds a key that signs at once (domain.RotateNow) through Rotate at
// the clock's time and reloads iss.
func rotate(t *testing.T, iss *Issuer, store ports.KeyStore, clk ports.Clock) domain.KeyInfo {
	t.Helper()
	return rotateWhen(t, iss, store, clk, domain.RotateNow)
}

// rotateWhen adds keys through Rotate at the clock's time, reloads iss and
// returns the first key added (the access-token key, unless configured).
func rotateWhen(t *testing.T, iss *Issuer, store ports.KeyStore, clk ports.Clock, when domain.KeyRotation) domain.KeyInfo {
	t.Helper()
	infos, err := newKeyManager(t, store, clk, iss.opts).Rotate(context.Background(), when)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	return infos[0]
}

// rotateOne is Rotate of a KeyManager that adds one key, which it returns.
func rotateOne(t *testing.T, m *KeyManager, when domain.KeyRotation) domain.KeyInfo {
	t.Helper()
	infos, err := m.Rotate(context.Background(), when)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("Rotate added %d keys, want 1: %+v", len(infos), infos)
	}
	return infos[0]
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
	iss := startIssuer(t, store, clk, opts)
	startRun(t, iss)
	return iss
}
