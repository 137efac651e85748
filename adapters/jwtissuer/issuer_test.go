package jwtissuer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
)

// ---------------------------------------------------------------------------
// Round trips and the shape of a token

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			at, err := iss.Issue(context.Background(), testUser, testSession, domain.HookClaims{})
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
			if string(h["typ"]) != `"at+jwt"` {
				t.Errorf("typ = %s, want \"at+jwt\" (RFC 9068)", h["typ"])
			}
			if string(h["kid"]) != fmt.Sprintf("%q", signer(iss).kid) {
				t.Errorf("kid = %s, want %q", h["kid"], signer(iss).kid)
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

// New only checks its options; the keys are loaded (and created) by Start.
// Before that nothing is signed and nothing verifies, and nothing panics.
func TestRule_new_does_no_io_and_nothing_works_before_start(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte("s"), MinHMACKeyLen)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"EdDSA", optsFor(EdDSA)},
		{"ES256", optsFor(ES256)},
		{"HS256", optsFor(HS256)},
		{"HS256_configured", Options{Issuer: testOpts.Issuer, Audience: testOpts.Audience, Algorithm: HS256, HMACSecret: secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, clk := newFakeKeyStore(), clock.NewManual(t0)
			iss, err := New(store, clk, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if store.readCount() != 0 || store.count() != 0 {
				t.Fatalf("New used the store: %d reads, %d keys", store.readCount(), store.count())
			}

			if _, err := iss.Issue(ctx, testUser, testSession, domain.HookClaims{}); !errors.Is(err, errNotStarted) {
				t.Errorf("Issue before Start = %v, want an error saying Start was not called", err)
			}
			// A genuine token from a started node sharing the store.
			token := issue(t, startIssuer(t, store, clk, tc.opts))
			reads := store.readCount()
			assertInvalid(t, iss, token, errNotStarted)
			if store.readCount() != reads {
				t.Error("Verify before Start read the store")
			}
			if got := string(iss.JWKSJSON()); got != `{"keys":[]}` {
				t.Errorf("JWKS before Start = %s, want an empty set", got)
			}

			keys := store.count()
			for range 2 { // a second Start is harmless
				if err := iss.Start(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if store.count() != keys {
				t.Errorf("Start added a key to a store that had one: %d keys, want %d", store.count(), keys)
			}
			assertValid(t, iss, token)
			assertValid(t, iss, issue(t, iss))
		})
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
		if _, err := New(newFakeKeyStore(), clk, opts); err == nil {
			t.Errorf("New(%+v) succeeded", opts)
		}
	}

	iss := startIssuer(t, newFakeKeyStore(), clk, Options{Issuer: "i", Audience: "a", TTL: time.Hour})
	at, err := iss.Issue(context.Background(), testUser, testSession, domain.HookClaims{})
	if err != nil {
		t.Fatal(err)
	}
	if !at.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("ExpiresAt = %v, want TTL of one hour", at.ExpiresAt)
	}
	if _, err := iss.Issue(context.Background(), domain.User{ID: "nope"}, testSession, domain.HookClaims{}); err == nil {
		t.Error("Issue accepted a user without a valid id")
	}

	failing := newFakeKeyStore()
	failing.err = errors.New("boom")
	iss, err = New(failing, clk, testOpts)
	if err != nil {
		t.Fatalf("New read the store: %v", err)
	}
	if err := iss.Start(context.Background()); err == nil {
		t.Error("Start succeeded with a failing store")
	}

	// A stored key of the configured algorithm that does not parse stops
	// the start rather than being skipped.
	broken := newFakeKeyStore()
	_ = broken.AddKey(context.Background(), domain.SigningKey{
		ID: "00000000000000aa", Purpose: domain.KeyPurposeAccessToken, Algorithm: ES256, Secret: []byte("junk"), CreatedAt: t0,
	})
	iss, err = New(broken, clk, optsFor(ES256))
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Start(context.Background()); err == nil || strings.Contains(err.Error(), "junk") {
		t.Errorf("Start with a broken ES256 key: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	keys := newKeyManager(t, store, clk, testOpts)
	var wg sync.WaitGroup
	for n := range 8 {
		wg.Go(func() {
			for range 20 {
				at, err := iss.Issue(context.Background(), testUser, testSession, domain.HookClaims{})
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
					if _, err := keys.Rotate(context.Background(), domain.RotateNow); err != nil {
						t.Error(err)
					}
				}
				_ = iss.JWKSJSON()
			}
		})
	}
	wg.Wait()
}

// The claims hook's claims join the access token's, which still verifies
// (twice: the second time from the verified-token cache) and keeps every
// claim of its own.
func TestIssue_with_the_hooks_claims(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newIssuerFor(t, alg)
			extra, err := domain.ParseHookClaims([]byte(`{"tenant":"acme","roles":["a","b"]}`))
			if err != nil {
				t.Fatal(err)
			}
			at, err := iss.Issue(context.Background(), testUser, testSession, extra)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if p, err := iss.Verify(context.Background(), at.Token); err != nil || p.UserID != testUser.ID || p.Session.ID != testSession.ID {
					t.Fatalf("Verify = %+v, %v", p, err)
				}
			}
			c := decodeSegment(t, at.Token, 1)
			if string(c["tenant"]) != `"acme"` || string(c["roles"]) != `["a","b"]` || string(c["sub"]) != `"`+testUser.ID.String()+`"` ||
				string(c["sid"]) != `"`+testSession.ID+`"` || c["profiles"] == nil {
				t.Errorf("claims %v", c)
			}
		})
	}
}
