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
	if _, ok := iss.verified.get(token, clk.Now()); !ok {
		t.Fatal("a verified token was not cached")
	}
	clk.Advance(DefaultTTL)
	if _, ok := iss.verified.get(token, clk.Now()); ok {
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
		c.put(fmt.Sprintf("token-%d", i), domain.Principal{}, now.Add(time.Minute), now)
	}
	if n := len(c.entries); n > verifiedCacheSize {
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
