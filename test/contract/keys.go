package contract

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStore runs the contract of ports.KeyStore.
func KeyStore(t *testing.T, newStore func(t *testing.T) ports.KeyStore) {
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		got, err := newStore(t).Keys(t.Context(), domain.KeyPurposeAccessToken)
		if err != nil {
			t.Fatalf("Keys: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("Keys of an empty store = %d keys, want none", len(got))
		}
	})

	t.Run("add_and_list", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		// Added out of order; two share a creation time, so the id breaks the tie.
		late := newKey("k-late", domain.KeyPurposeAccessToken, at(2*time.Hour))
		b := newKey("k-b", domain.KeyPurposeAccessToken, at(time.Hour))
		a := newKey("k-a", domain.KeyPurposeAccessToken, at(time.Hour))
		early := newKey("k-z", domain.KeyPurposeAccessToken, at(time.Microsecond))
		hmac := newKey("h-1", domain.KeyPurposeRefreshHMAC, at(0))
		hmac.Algorithm = "HS256"
		for _, k := range []domain.SigningKey{late, b, hmac, a, early} {
			if err := store.AddKey(ctx, k); err != nil {
				t.Fatalf("AddKey(%s): %v", k.ID, err)
			}
		}
		checkKeys(t, store, domain.KeyPurposeAccessToken, early, a, b, late)
		checkKeys(t, store, domain.KeyPurposeRefreshHMAC, hmac)
		checkKeys(t, store, "no-such-purpose")
	})

	t.Run("duplicate_id", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		k := newKey("k-1", domain.KeyPurposeAccessToken, at(0))
		if err := store.AddKey(ctx, k); err != nil {
			t.Fatalf("AddKey: %v", err)
		}
		dup := newKey("k-1", domain.KeyPurposeRefreshHMAC, at(time.Hour))
		if err := store.AddKey(ctx, dup); !errors.Is(err, domain.ErrKeyExists) {
			t.Errorf("AddKey(existing id) = %v, want domain.ErrKeyExists", err)
		}
		checkKeys(t, store, domain.KeyPurposeAccessToken, k)
		checkKeys(t, store, domain.KeyPurposeRefreshHMAC)
	})

	t.Run("values_are_copies", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		k := newKey("k-1", domain.KeyPurposeAccessToken, at(0))
		want := k
		want.Secret = bytes.Clone(k.Secret)
		if err := store.AddKey(ctx, k); err != nil {
			t.Fatalf("AddKey: %v", err)
		}
		k.Secret[0] ^= 0xff // the caller's slice, after AddKey
		got, err := store.Keys(ctx, domain.KeyPurposeAccessToken)
		if err != nil {
			t.Fatalf("Keys: %v", err)
		}
		got[0].Secret[1] ^= 0xff // the returned slice
		checkKeys(t, store, domain.KeyPurposeAccessToken, want)
	})
}

// newKey returns a key with 64 random bytes of secret, containing zero
// bytes and high bits so that a text column would mangle it.
func newKey(id string, purpose domain.KeyPurpose, created time.Time) domain.SigningKey {
	secret := []byte{0x00, 0xff, 0x80, 0x00}
	secret = append(secret, []byte(randomHex(30))...)
	secret = append(secret, 0x00, 0xc3, 0x28, 0x00)
	return domain.SigningKey{ID: id, Purpose: purpose, Algorithm: "EdDSA", Secret: secret, CreatedAt: created}
}

func checkKeys(t *testing.T, store ports.KeyStore, purpose domain.KeyPurpose, want ...domain.SigningKey) {
	t.Helper()
	got, err := store.Keys(t.Context(), purpose)
	if err != nil {
		t.Fatalf("Keys(%s): %v", purpose, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Keys(%s) returned %d keys, want %d", purpose, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Purpose != w.Purpose || g.Algorithm != w.Algorithm ||
			!bytes.Equal(g.Secret, w.Secret) || !g.CreatedAt.Equal(w.CreatedAt) {
			t.Errorf("Keys(%s)[%d] = {%s %s %s %x %s}, want {%s %s %s %x %s}", purpose, i,
				g.ID, g.Purpose, g.Algorithm, g.Secret, g.CreatedAt.Format(time.RFC3339Nano),
				w.ID, w.Purpose, w.Algorithm, w.Secret, w.CreatedAt.Format(time.RFC3339Nano))
		}
	}
}
