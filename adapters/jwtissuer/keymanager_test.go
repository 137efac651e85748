package jwtissuer

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
)

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
