package jwtissuer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// A verified access token of the provider is served from the cache until
// its exp, a copy each time; past exp it is verified again and refused.
func TestProviderTokens_verified_cache(t *testing.T) {
	p, _, clk := newProviderTokens(t, EdDSA)
	ctx := context.Background()
	want := accessClaimsFor(clk.Now().Truncate(time.Second))
	token, err := p.IssueAccessToken(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.VerifyAccessToken(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if p.verified.entries.Len() != 1 {
		t.Fatalf("cached %d tokens, want 1", p.verified.entries.Len())
	}
	first.Scopes[0], first.AMR[0] = "changed", "changed"
	second, err := p.VerifyAccessToken(ctx, token)
	if err != nil || !slices.Equal(second.Scopes, want.Scopes) || !slices.Equal(second.AMR, want.AMR) {
		t.Fatalf("from the cache: %+v, %v; want %+v", second, err, want)
	}
	clk.Advance(16 * time.Minute)
	if _, err := p.VerifyAccessToken(ctx, token); !errors.Is(err, domain.ErrInvalidToken) {
		t.Errorf("an expired token once cached: %v, want ErrInvalidToken", err)
	}
}

// A cached token whose key is no longer published is forgotten: the
// caller verifies it again (and the retired key refuses it).
func TestVerifiedAccessTokens_key_gone(t *testing.T) {
	c := newVerifiedAccessTokens()
	now := time.Unix(1_800_000_000, 0)
	claims := accessClaimsFor(now)
	c.put("tok", "k1", claims, now)
	published := true
	isPublished := func(kid string) bool { return kid == "k1" && published }
	if _, ok := c.get("tok", now, isPublished); !ok {
		t.Fatal("a cached token with its key was not served")
	}
	published = false
	if _, ok := c.get("tok", now, isPublished); ok {
		t.Error("a token whose key is gone was served")
	}
	published = true
	if _, ok := c.get("tok", now, isPublished); ok {
		t.Error("a forgotten token came back")
	}
	// Nothing is kept of a token without a kid, or one already expired.
	c.put("nokid", "", claims, now)
	c.put("late", "k1", claims, claims.ExpiresAt)
	if c.entries.Len() != 0 {
		t.Errorf("cached %d tokens, want none", c.entries.Len())
	}
}
