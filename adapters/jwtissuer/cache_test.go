package jwtissuer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// A verified token is served from the cache until its exp, and no longer:
// the leeway past exp is granted by a full verification only.
func TestRule_verified_cache_ends_at_exp(t *testing.T) {
	t.Parallel()
	iss, _, clk := newTestIssuer(t)
	ctx := context.Background()
	token := issue(t, iss)
	if _, err := iss.Verify(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := iss.verified.get(token, clk.Now()); !ok {
		t.Fatal("a verified token was not cached")
	}
	clk.Advance(DefaultTTL)
	if _, _, ok := iss.verified.get(token, clk.Now()); ok {
		t.Fatal("the cache serves a token at its exp")
	}
	clk.Advance(DefaultLeeway + time.Second)
	if _, err := iss.Verify(ctx, token); err == nil {
		t.Fatal("an expired token verified")
	}
}

// Callers cannot change what the cache holds through the returned slice.
func TestRule_verified_cache_hands_out_copies(t *testing.T) {
	t.Parallel()
	iss, _, _ := newTestIssuer(t)
	ctx := context.Background()
	token := issue(t, iss)
	p, err := iss.Verify(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Profiles.Strings()
	for _, got := range []domain.Principal{p, mustVerify(t, iss, token)} {
		// Scribble over what the caller got, then ask again.
		for i := range got.Profiles {
			got.Profiles[i] = "ROLE_SCRIBBLED"
		}
		again := mustVerify(t, iss, token)
		if fmt.Sprint(again.Profiles.Strings()) != fmt.Sprint(want) {
			t.Fatalf("a caller's change reached the cached principal: %v", again.Profiles)
		}
	}
}

func TestRule_verified_cache_is_bounded(t *testing.T) {
	t.Parallel()
	c := newVerifiedCache()
	now := time.Unix(1_800_000_000, 0)
	for i := range verifiedCacheSize + 100 {
		c.put(fmt.Sprintf("token-%d", i), "kid", domain.Principal{}, now.Add(time.Minute), now)
	}
	if n := c.entries.Len(); n > verifiedCacheSize {
		t.Fatalf("%d entries cached, bound is %d", n, verifiedCacheSize)
	}
}

func mustVerify(t *testing.T, iss *Issuer, token string) domain.Principal {
	t.Helper()
	p, err := iss.Verify(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// When full, the least recently used token goes; a token in use stays.
func TestRule_verified_cache_keeps_tokens_in_use_when_full(t *testing.T) {
	t.Parallel()
	c := newVerifiedCache()
	now := time.Unix(1_800_000_000, 0)
	p := domain.Principal{UserID: testUser.ID}
	c.put("in-use", "kid", p, now.Add(time.Minute), now)
	for i := range verifiedCacheSize {
		c.put(fmt.Sprintf("token-%d", i), "kid", p, now.Add(time.Minute), now)
		if i%1000 == 0 {
			if _, _, ok := c.get("in-use", now); !ok {
				t.Fatalf("a token in use was dropped after %d others", i+1)
			}
		}
	}
	if _, _, ok := c.get("in-use", now); !ok {
		t.Error("a token in use was dropped")
	}
	if _, _, ok := c.get("token-0", now); ok {
		t.Error("the least recently used token was kept past the bound")
	}
	// An expired entry is dropped when found, making room.
	n := c.entries.Len()
	if _, _, ok := c.get("in-use", now.Add(time.Minute)); ok {
		t.Error("an expired token was served")
	}
	if c.entries.Len() != n-1 {
		t.Error("an expired token stayed in the cache")
	}
}

// A cached token is served only while its key verifies. Node b, cut off
// from the store, missed a rotation and signs with the old key two minutes
// after its successor took over; node a verifies and caches that token
// until its exp, which lies past the old key's retirement. From the
// retirement on, a refuses it, although it is cached and has not expired.
func TestAttack_cached_token_is_refused_once_its_key_retires(t *testing.T) {
	t.Parallel()
	a, store, clk := newTestIssuer(t)
	b := startIssuer(t, store, clk, testOpts)
	clk.Advance(time.Second)
	next := rotate(t, a, store, clk)

	clk.Advance(2 * time.Minute)
	token := issue(t, b)
	assertValid(t, a, token)
	retireAt := next.ActiveFrom.Add(a.opts.RetireAfter())
	exp := clk.Now().Add(DefaultTTL)
	if !exp.After(retireAt.Add(time.Second)) {
		t.Fatalf("the token expires at %v, before its key retires at %v", exp, retireAt)
	}

	clk.Set(retireAt.Add(time.Second))
	if _, _, ok := a.verified.get(token, clk.Now()); !ok {
		t.Fatal("the token is not cached: the test tests nothing")
	}
	assertInvalid(t, a, token, errRetiredKID)
}

// A key removed from the store (by hand, after a leak) takes its cached
// tokens with it at the next reload.
func TestAttack_cached_token_is_refused_once_its_key_is_removed(t *testing.T) {
	t.Parallel()
	iss, store, clk := newTestIssuer(t)
	ctx := context.Background()
	leaked := signer(iss).kid
	token := issue(t, iss)
	assertValid(t, iss, token)

	clk.Advance(time.Second)
	rotate(t, iss, store, clk)
	if _, _, ok := iss.verified.get(token, clk.Now()); ok {
		t.Error("a change of the key set left verified tokens in the cache")
	}
	assertValid(t, iss, token) // the old key still verifies: cached again
	store.mu.Lock()
	delete(store.keys, leaked)
	store.mu.Unlock()
	if err := iss.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	assertInvalid(t, iss, token, errUnknownKID)
}
