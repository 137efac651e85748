package jwtissuer

import (
	"context"
	"encoding/json"
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
			own := signer(iss).kid
			clk.Advance(time.Minute)
			var others []string
			for _, other := range allAlgorithms {
				if other != configured {
					k := rotateOne(t, newKeyManager(t, store, clk, optsFor(other)), domain.RotateNow)
					others = append(others, k.KID)
				}
			}
			if err := iss.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := signer(iss).kid; got != own {
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
			oldKID := signer(iss).kid
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
			retireAt := next.ActiveFrom.Add(ReloadInterval + DefaultTTL + DefaultLeeway)
			clk.Set(next.ActiveFrom.Add(ReloadInterval))
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

// TestRule_rotated_key_is_published_before_it_signs: a rotation without
// RotateNow publishes the new key at once (JWKS, verification) and lets it
// sign only ActivateAfter later (reload + JWKS max-age + leeway), on every
// node at the same moment and without a reload; the old key retires
// RetireAfter past that moment. So no verifier that caches the JWK set for
// its max-age ever meets the new kid before it has it.
func TestRule_rotated_key_is_published_before_it_signs(t *testing.T) {
	t.Parallel()
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			iss, store, clk := newIssuerFor(t, alg)
			other := startIssuer(t, store, clk, optsFor(alg))
			oldKID := signer(iss).kid
			clk.Advance(10 * time.Minute)
			rotatedAt := clk.Now()

			next := rotateWhen(t, iss, store, clk, domain.RotateWhenPublished)
			activeFrom := rotatedAt.Add(ReloadInterval + JWKSMaxAge + DefaultLeeway)
			if next.Status != domain.KeyPending || !next.ActiveFrom.Equal(activeFrom) {
				t.Fatalf("Rotate returned %+v, want pending until %v", next, activeFrom)
			}
			if err := other.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			kidOf := func(token string) string {
				var kid string
				if err := json.Unmarshal(decodeSegment(t, token, 0)["kid"], &kid); err != nil {
					t.Fatal(err)
				}
				return kid
			}
			if alg != HS256 {
				if got := jwksKIDs(iss); !slices.Equal(got, []string{oldKID, next.KID}) {
					t.Errorf("JWKS right after the rotation = %v, want both keys", got)
				}
			}
			// Until its time the old key signs, and a token of the new one
			// (from a node whose clock runs ahead) verifies.
			clk.Set(activeFrom.Add(-time.Second))
			if got := kidOf(issue(t, iss)); got != oldKID {
				t.Errorf("a second before the new key's time, kid = %s, want the old %s", got, oldKID)
			}
			sign, _, err := iss.alg.parse(store.keys[next.KID].Secret)
			if err != nil {
				t.Fatal(err)
			}
			assertValid(t, other, signRaw(t, iss.alg.method, sign, next.KID, claimsAt(clk.Now()), nil))

			// From its time the new key signs on every node, no reload.
			reads := store.readCount()
			clk.Set(activeFrom)
			for _, node := range []*Issuer{iss, other} {
				token := issue(t, node)
				if got := kidOf(token); got != next.KID {
					t.Errorf("at the new key's time, kid = %s, want %s", got, next.KID)
				}
				assertValid(t, iss, token)
				assertValid(t, other, token)
			}
			if store.readCount() != reads {
				t.Error("the switch needed a store read")
			}

			// The old key's last token, from a node that had not loaded the
			// new key by its time (a reload later), lives until the old key
			// retires; then the old key leaves the JWK set.
			retireAt := activeFrom.Add(iss.opts.RetireAfter())
			lastOld := signRaw(t, iss.alg.method, other.snapshot().byKID[oldKID].sign, oldKID, claimsAt(activeFrom.Add(ReloadInterval)), nil)
			clk.Set(retireAt.Add(-time.Second))
			assertValid(t, iss, lastOld)
			clk.Set(retireAt.Add(time.Second))
			assertInvalid(t, iss, lastOld, errRetiredKID)
			if alg != HS256 {
				if got := jwksKIDs(iss); !slices.Equal(got, []string{next.KID}) {
					t.Errorf("JWKS after the retirement = %v, want only the new key", got)
				}
			}
		})
	}
}

// The first key of an algorithm has nothing to wait for: no verifier can
// know a key of that algorithm yet, and nothing else could sign.
func TestRule_first_rotated_key_of_an_algorithm_signs_at_once(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	info := rotateOne(t, newKeyManager(t, store, clk, testOpts), domain.RotateWhenPublished)
	if info.Status != domain.KeyActive || !info.ActiveFrom.Equal(t0) {
		t.Fatalf("Rotate on an empty store = %+v, want active from now", info)
	}
	iss := startIssuer(t, store, clk, testOpts)
	if got := signer(iss).kid; got != info.KID {
		t.Errorf("signing kid = %s, want %s", got, info.KID)
	}
	if store.count() != 1 {
		t.Errorf("store holds %d keys, want 1", store.count())
	}
}

// A key set whose only key is not due yet (stored by a clock ahead of
// ours) still signs, with that key: refusing to sign would stop logins.
func TestRule_a_key_set_with_no_key_due_signs_with_the_first(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	ahead := clock.NewManual(t0.Add(time.Minute))
	info := rotateOne(t, newKeyManager(t, store, ahead, testOpts), domain.RotateNow)
	iss := startIssuer(t, store, clk, testOpts)
	if got := signer(iss).kid; got != info.KID {
		t.Fatalf("signing kid = %s, want %s", got, info.KID)
	}
	assertValid(t, iss, issue(t, iss))
}

// TestRule_key_added_by_another_node_is_found_on_a_miss: a node that rotated
// signs with a key this node has not loaded yet; the unknown kid makes it
// reload (at most once per missReloadInterval).
func TestRule_key_added_by_another_node_is_found_on_a_miss(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	oldKID := signer(iss).kid
	clk.Advance(time.Second)
	other := startIssuer(t, store, clk, testOpts)
	next := rotate(t, other, store, clk)
	rotated := issue(t, other)

	assertValid(t, iss, rotated)
	if signer(iss).kid != next.KID {
		t.Errorf("signing kid = %s, want the newest key", signer(iss).kid)
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
	eventually(t, "the new key signs", func() bool { return signer(iss).kid == next.KID })
	if n := len(iss.JWKS().Keys); n != 2 {
		t.Errorf("JWKS has %d keys, want 2", n)
	}
	// The line is written just after the new keys are installed: wait for
	// it rather than race it.
	eventually(t, "the change of signing key is logged", func() bool {
		return strings.Contains(logs.String(), "signing key changed") && strings.Contains(logs.String(), next.KID)
	})
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

	if _, err := newKeyManager(t, storeA, clk, opts).Rotate(context.Background(), domain.RotateNow); !errors.Is(err, domain.ErrKeyConfigured) {
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

// jwksKIDs returns the kids of iss's JWK set, in order.
func jwksKIDs(iss *Issuer) []string {
	var kids []string
	for _, k := range iss.JWKS().Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}
