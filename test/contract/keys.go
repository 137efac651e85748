package contract

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStorage is one empty key storage of an adapter, with what the
// contract of ports.KeyStore needs besides the port to check that secrets
// are sealed at rest: the stored bytes, and a way to tamper with them.
type KeyStorage struct {
	// Open returns a key store over this storage that seals and opens
	// secrets with box. Stores opened with different boxes share the rows.
	Open func(box ports.SecretBox) ports.KeyStore
	// Stored returns the secret of key id as it is stored.
	Stored func(t *testing.T, id string) []byte
	// SetStored overwrites the stored secret of key id, as somebody who
	// can write to the database could.
	SetStored func(t *testing.T, id string, stored []byte)
	// Reencrypt re-seals every secret under box's current key, as
	// `userd secrets reencrypt` does, and returns how many changed.
	Reencrypt func(ctx context.Context, box ports.SecretBox) (int, error)
}

// newBox returns a secret box over keys.
func newBox(t *testing.T, keys ...[]byte) ports.SecretBox {
	t.Helper()
	b, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// KeyStore runs the contract of ports.KeyStore over the storages that
// newStorage makes.
func KeyStore(t *testing.T, newStorage func(t *testing.T) KeyStorage) {
	newStore := func(t *testing.T) ports.KeyStore {
		return newStorage(t).Open(newBox(t, secretbox.NewKey()))
	}

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
		// The OpenID provider's: a secret as long as a 2048-bit RSA key in
		// PKCS#8 (about 1,220 bytes) or a 4096-bit one (about 2,400).
		oidc := newKey("o-1", domain.KeyPurposeOIDC, at(time.Hour))
		oidc.Algorithm, oidc.Secret = "RS256", append(oidc.Secret, bytes.Repeat([]byte{0xa5, 0x00}, 1200)...)
		for _, k := range []domain.SigningKey{late, b, hmac, oidc, a, early} {
			if err := store.AddKey(ctx, k); err != nil {
				t.Fatalf("AddKey(%s): %v", k.ID, err)
			}
		}
		checkKeys(t, store, domain.KeyPurposeAccessToken, early, a, b, late)
		checkKeys(t, store, domain.KeyPurposeRefreshHMAC, hmac)
		checkKeys(t, store, domain.KeyPurposeOIDC, oidc)
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

	// What is stored is sealed: the secret is not in it, and only a box
	// with the key that sealed it opens it.
	t.Run("sealed_at_rest", func(t *testing.T) {
		t.Parallel()
		ctx, storage, key := t.Context(), newStorage(t), secretbox.NewKey()
		store := storage.Open(newBox(t, key))
		k := newKey("k-1", domain.KeyPurposeAccessToken, at(0))
		if err := store.AddKey(ctx, k); err != nil {
			t.Fatalf("AddKey: %v", err)
		}
		stored := storage.Stored(t, k.ID)
		// The secret's random middle: 60 hex characters.
		if bytes.Contains(stored, k.Secret[4:len(k.Secret)-4]) || len(stored) <= len(k.Secret) {
			t.Errorf("stored secret %x holds the secret %x in clear", stored, k.Secret)
		}
		if _, err := storage.Open(newBox(t, secretbox.NewKey())).Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Keys with another secret key = %v, want domain.ErrSecretKeyUnknown", err)
		}
		if _, err := storage.Open(newBox(t)).Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretKeyMissing) {
			t.Errorf("Keys without a secret key = %v, want domain.ErrSecretKeyMissing", err)
		}
		if err := storage.Open(newBox(t)).AddKey(ctx, newKey("k-2", domain.KeyPurposeAccessToken, at(0))); !errors.Is(err, domain.ErrSecretKeyMissing) {
			t.Errorf("AddKey without a secret key = %v, want domain.ErrSecretKeyMissing", err)
		}
		checkKeys(t, storage.Open(newBox(t, key)), domain.KeyPurposeAccessToken, k)
	})

	// A sealed secret is bound to its row: copied onto another key's row,
	// or altered, it does not open.
	t.Run("bound_to_its_row", func(t *testing.T) {
		t.Parallel()
		ctx, storage := t.Context(), newStorage(t)
		store := storage.Open(newBox(t, secretbox.NewKey()))
		mine := newKey("k-mine", domain.KeyPurposeAccessToken, at(0))
		theirs := newKey("k-theirs", domain.KeyPurposeAccessToken, at(time.Hour))
		for _, k := range []domain.SigningKey{mine, theirs} {
			if err := store.AddKey(ctx, k); err != nil {
				t.Fatalf("AddKey(%s): %v", k.ID, err)
			}
		}
		original := storage.Stored(t, theirs.ID)
		storage.SetStored(t, theirs.ID, storage.Stored(t, mine.ID))
		if got, err := store.Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("Keys with a secret moved to another row = %d keys, %v; want domain.ErrSecretInvalid", len(got), err)
		}
		altered := bytes.Clone(original)
		altered[len(altered)-1] ^= 1
		storage.SetStored(t, theirs.ID, altered)
		if _, err := store.Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("Keys with an altered secret = %v, want domain.ErrSecretInvalid", err)
		}
		storage.SetStored(t, theirs.ID, original)
		checkKeys(t, store, domain.KeyPurposeAccessToken, mine, theirs)
	})

	// The secret key rotates: a new key first, the old one after, opens
	// everything; re-encryption moves every secret to the new key, after
	// which the old one can go.
	t.Run("rotation", func(t *testing.T) {
		t.Parallel()
		ctx, storage := t.Context(), newStorage(t)
		oldKey, newKey2 := secretbox.NewKey(), secretbox.NewKey()
		before := storage.Open(newBox(t, oldKey))
		a := newKey("k-a", domain.KeyPurposeAccessToken, at(0))
		h := newKey("h-1", domain.KeyPurposeRefreshHMAC, at(0))
		for _, k := range []domain.SigningKey{a, h} {
			if err := before.AddKey(ctx, k); err != nil {
				t.Fatalf("AddKey(%s): %v", k.ID, err)
			}
		}
		both := newBox(t, newKey2, oldKey)
		during := storage.Open(both)
		checkKeys(t, during, domain.KeyPurposeAccessToken, a)
		b := newKey("k-b", domain.KeyPurposeAccessToken, at(time.Hour))
		if err := during.AddKey(ctx, b); err != nil {
			t.Fatalf("AddKey(k-b): %v", err)
		}
		checkKeys(t, during, domain.KeyPurposeAccessToken, a, b)
		if _, err := storage.Open(newBox(t, newKey2)).Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Keys with the new key only, before re-encryption = %v, want domain.ErrSecretKeyUnknown", err)
		}
		if _, err := storage.Open(newBox(t, oldKey)).Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Keys with the old key only, after a key sealed under the new = %v, want domain.ErrSecretKeyUnknown", err)
		}

		if n, err := storage.Reencrypt(ctx, both); err != nil || n != 2 {
			t.Fatalf("Reencrypt = %d, %v; want the 2 secrets sealed under the old key", n, err)
		}
		if n, err := storage.Reencrypt(ctx, both); err != nil || n != 0 {
			t.Errorf("second Reencrypt = %d, %v; want nothing left to do", n, err)
		}
		after := storage.Open(newBox(t, newKey2))
		checkKeys(t, after, domain.KeyPurposeAccessToken, a, b)
		checkKeys(t, after, domain.KeyPurposeRefreshHMAC, h)
		if _, err := storage.Open(newBox(t, oldKey)).Keys(ctx, domain.KeyPurposeRefreshHMAC); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Keys with the old key only, after re-encryption = %v, want domain.ErrSecretKeyUnknown", err)
		}
		// Without the key a secret was sealed under, nothing is rewritten.
		if n, err := storage.Reencrypt(ctx, newBox(t, secretbox.NewKey())); !errors.Is(err, domain.ErrSecretKeyUnknown) || n != 0 {
			t.Errorf("Reencrypt without the current key = %d, %v; want domain.ErrSecretKeyUnknown", n, err)
		}
		checkKeys(t, after, domain.KeyPurposeAccessToken, a, b)
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
