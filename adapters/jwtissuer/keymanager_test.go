package jwtissuer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
)

func TestRule_list_keys_shows_status(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	ctx := context.Background()
	keys := newKeyManager(t, store, clk, testOpts)

	if got, err := keys.List(ctx); err != nil || len(got) != 0 || store.count() != 0 {
		t.Fatalf("List on an empty store = %v, %v; store holds %d", got, err, store.count())
	}
	first := rotateOne(t, keys, domain.RotateNow)
	clk.Advance(time.Minute)
	ignored := rotateOne(t, newKeyManager(t, store, clk, optsFor(ES256)), domain.RotateNow)
	clk.Advance(time.Minute)
	second := rotateOne(t, keys, domain.RotateNow)
	retireAt := second.ActiveFrom.Add(ReloadInterval + DefaultTTL + DefaultLeeway)

	check := func(want ...domain.KeyInfo) {
		t.Helper()
		got, err := keys.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b domain.KeyInfo) bool {
			return a.KID == b.KID && a.Purpose == b.Purpose && a.Algorithm == b.Algorithm && a.ActiveFrom.Equal(b.ActiveFrom) &&
				a.Status == b.Status && a.RetiresAt.Equal(b.RetiresAt) && a.Configured == b.Configured
		}) {
			t.Errorf("List at %s:\n got %+v\nwant %+v", clk.Now().Format(time.TimeOnly), got, want)
		}
	}
	firstAt := func(s domain.KeyStatus) domain.KeyInfo {
		return domain.KeyInfo{KID: first.KID, Purpose: domain.KeyPurposeAccessToken, Algorithm: EdDSA, ActiveFrom: first.ActiveFrom, Status: s, RetiresAt: retireAt}
	}
	ignoredInfo := domain.KeyInfo{KID: ignored.KID, Purpose: domain.KeyPurposeAccessToken, Algorithm: ES256, ActiveFrom: ignored.ActiveFrom, Status: domain.KeyIgnored}
	check(firstAt(domain.KeyPublished), ignoredInfo, second)
	clk.Set(retireAt)
	check(firstAt(domain.KeyPublished), ignoredInfo, second)
	clk.Set(retireAt.Add(time.Second))
	check(firstAt(domain.KeyRetired), ignoredInfo, second)

	// A rotation without RotateNow: pending until its time, then active;
	// the key before it retires counting from that time.
	pending := rotateOne(t, keys, domain.RotateWhenPublished)
	if want := clk.Now().Add(ReloadInterval + JWKSMaxAge + DefaultLeeway); pending.Status != domain.KeyPending || !pending.ActiveFrom.Equal(want) {
		t.Fatalf("Rotate = %+v, want pending until %v", pending, want)
	}
	secondAt := func(s domain.KeyStatus) domain.KeyInfo {
		info := second
		info.Status, info.RetiresAt = s, pending.ActiveFrom.Add(ReloadInterval+DefaultTTL+DefaultLeeway)
		return info
	}
	check(firstAt(domain.KeyRetired), ignoredInfo, secondAt(domain.KeyActive), pending)
	clk.Set(pending.ActiveFrom.Add(-time.Second))
	check(firstAt(domain.KeyRetired), ignoredInfo, secondAt(domain.KeyActive), pending)
	clk.Set(pending.ActiveFrom)
	pending.Status = domain.KeyActive
	check(firstAt(domain.KeyRetired), ignoredInfo, secondAt(domain.KeyPublished), pending)

	// Under HS256 with a configured secret, every stored key is ignored.
	opts := optsFor(HS256)
	opts.HMACSecret = bytes.Repeat([]byte("k"), 32)
	got, err := newKeyManager(t, store, clk, opts).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || !got[0].Configured || got[0].Status != domain.KeyActive || got[0].KID != ConfiguredKID(opts.HMACSecret) {
		t.Fatalf("List with a configured secret = %+v", got)
	}
	for _, k := range got[1:] {
		if k.Status != domain.KeyIgnored {
			t.Errorf("stored key %s is %s, want ignored", k.KID, k.Status)
		}
	}
}

// The errors of the port: a configured key cannot be rotated (and the store
// is left alone), and a store outage reaches the caller as ErrUnavailable.
func TestRule_key_manager_errors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewManual(t0)
	if _, err := NewKeyManager(newFakeKeyStore(), clk, Options{Issuer: "i"}); err == nil {
		t.Error("NewKeyManager accepted options without an audience")
	}

	store := newFakeKeyStore()
	opts := optsFor(HS256)
	opts.HMACSecret = bytes.Repeat([]byte("k"), MinHMACKeyLen)
	if _, err := newKeyManager(t, store, clk, opts).Rotate(ctx, domain.RotateNow); !errors.Is(err, domain.ErrKeyConfigured) {
		t.Errorf("Rotate with a configured key = %v, want domain.ErrKeyConfigured", err)
	}
	if store.count() != 0 || store.readCount() != 0 {
		t.Error("Rotate with a configured key used the store")
	}

	store.setErr(fmt.Errorf("db down: %w", domain.ErrUnavailable))
	keys := newKeyManager(t, store, clk, testOpts)
	if _, err := keys.Rotate(ctx, domain.RotateNow); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Rotate with the store down = %v, want domain.ErrUnavailable", err)
	}
	if _, err := keys.List(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("List with the store down = %v, want domain.ErrUnavailable", err)
	}
}
