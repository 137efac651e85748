package jwtissuer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/logbuf"
)

// ---------------------------------------------------------------------------
// Rules: keys, their storage, rotation and reloads

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

			second := startIssuer(t, store, clk, optsFor(alg))
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
					k, err := newKeyManager(t, store, clk, optsFor(other)).Rotate(context.Background())
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
			if next.KID == oldKID || len(next.KID) != 16 || next.Algorithm != alg || next.Status != domain.KeyActive {
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
	other := startIssuer(t, store, clk, testOpts)
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

func TestRule_periodic_reload_picks_up_a_key_from_another_issuer(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	var logs logbuf.Buffer
	iss := newRunningIssuer(t, store, clk, slog.New(slog.NewTextHandler(&logs, nil)))

	clk.Advance(time.Second)
	other := startIssuer(t, store, clk, testOpts)
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
	a := startIssuer(t, storeA, clk, opts)
	b := startIssuer(t, storeB, clk, opts)
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

	if _, err := newKeyManager(t, storeA, clk, opts).Rotate(context.Background()); !errors.Is(err, domain.ErrKeyConfigured) {
		t.Errorf("Rotate = %v, want domain.ErrKeyConfigured", err)
	}

	short := opts
	short.HMACSecret = []byte("only-31-bytes-long-secret-value")
	if _, err := New(storeA, clk, short); err == nil || strings.Contains(err.Error(), string(short.HMACSecret)) {
		t.Errorf("short secret: %v", err)
	}
	notHMAC := opts
	notHMAC.Algorithm = EdDSA
	if _, err := New(storeA, clk, notHMAC); err == nil || strings.Contains(err.Error(), string(secret)) {
		t.Errorf("secret with EdDSA: %v", err)
	}
}
