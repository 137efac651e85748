package secretbox_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
)

func newBox(t *testing.T, keys ...[]byte) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBox_round_trip(t *testing.T) {
	t.Parallel()
	b := newBox(t, secretbox.NewKey())
	for _, plain := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte{0, 0xff}, 100)} {
		sealed, err := b.Seal(plain, []byte("row-1"))
		if err != nil {
			t.Fatal(err)
		}
		// Long enough not to occur in random bytes by chance.
		if len(plain) >= 8 && bytes.Contains(sealed, plain) {
			t.Errorf("the sealed value holds the plaintext")
		}
		if !b.Current(sealed) {
			t.Errorf("Current(just sealed) = false")
		}
		got, err := b.Open(sealed, []byte("row-1"))
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Open = %x, %v; want %x", got, err, plain)
		}
	}
}

func TestBox_random_nonce(t *testing.T) {
	t.Parallel()
	b := newBox(t, secretbox.NewKey())
	one, _ := b.Seal([]byte("same"), []byte("ad"))
	two, _ := b.Seal([]byte("same"), []byte("ad"))
	if bytes.Equal(one, two) {
		t.Fatal("two seals of the same plaintext are equal: the nonce is not random")
	}
	if len(one) != 1+4+12+len("same")+16 {
		t.Errorf("sealed length %d, want header 5 + nonce 12 + plaintext + tag 16", len(one))
	}
}

func TestBox_wrong_associated_data_refused(t *testing.T) {
	t.Parallel()
	b := newBox(t, secretbox.NewKey())
	sealed, _ := b.Seal([]byte("secret"), []byte("row-1"))
	for _, ad := range []string{"row-2", "", "row-1 ", "row-"} {
		if got, err := b.Open(sealed, []byte(ad)); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("Open with ad %q = %q, %v; want domain.ErrSecretInvalid", ad, got, err)
		}
	}
}

func TestBox_tampered_byte_refused(t *testing.T) {
	t.Parallel()
	b := newBox(t, secretbox.NewKey())
	sealed, _ := b.Seal([]byte("a secret of some length"), []byte("row-1"))
	for i := range sealed {
		for _, bit := range []byte{0x01, 0x80} {
			tampered := bytes.Clone(sealed)
			tampered[i] ^= bit
			_, err := b.Open(tampered, []byte("row-1"))
			// Flipping a bit of the key id names a key the box lacks.
			if !errors.Is(err, domain.ErrSecretInvalid) && !errors.Is(err, domain.ErrSecretKeyUnknown) {
				t.Errorf("byte %d ^ %#x: Open = %v, want a refusal", i, bit, err)
			}
		}
	}
	for _, short := range [][]byte{nil, sealed[:5], sealed[:len(sealed)-1]} {
		if _, err := b.Open(short, []byte("row-1")); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("Open(%d bytes) = %v, want domain.ErrSecretInvalid", len(short), err)
		}
	}
}

func TestBox_rotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
	before := newBox(t, oldKey)
	sealed, _ := before.Seal([]byte("secret"), []byte("row-1"))

	// The new key first: it seals; the old one still opens.
	after := newBox(t, newKey, oldKey)
	if got, err := after.Open(sealed, []byte("row-1")); err != nil || string(got) != "secret" {
		t.Fatalf("Open after rotation = %q, %v", got, err)
	}
	if after.Current(sealed) {
		t.Error("Current(sealed under the old key) = true")
	}
	resealed, _ := after.Seal([]byte("secret"), []byte("row-1"))
	if !after.Current(resealed) {
		t.Error("Current(sealed under the new key) = false")
	}
	if after.CurrentKeyID() != secretbox.KeyID(newKey) || before.CurrentKeyID() != secretbox.KeyID(oldKey) {
		t.Error("CurrentKeyID is not the first key's id")
	}

	// The old key dropped: what it sealed no longer opens.
	only := newBox(t, newKey)
	if _, err := only.Open(sealed, []byte("row-1")); !errors.Is(err, domain.ErrSecretKeyUnknown) {
		t.Errorf("Open(sealed under a dropped key) = %v, want domain.ErrSecretKeyUnknown", err)
	}
	if got, err := only.Open(resealed, []byte("row-1")); err != nil || string(got) != "secret" {
		t.Errorf("Open(resealed) = %q, %v", got, err)
	}
}

func TestBox_unknown_key_refused(t *testing.T) {
	t.Parallel()
	sealed, _ := newBox(t, secretbox.NewKey()).Seal([]byte("secret"), []byte("row-1"))
	_, err := newBox(t, secretbox.NewKey(), secretbox.NewKey()).Open(sealed, []byte("row-1"))
	if !errors.Is(err, domain.ErrSecretKeyUnknown) {
		t.Fatalf("Open = %v, want domain.ErrSecretKeyUnknown", err)
	}
}

func TestBox_without_keys(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	if _, err := b.Seal([]byte("x"), nil); !errors.Is(err, domain.ErrSecretKeyMissing) {
		t.Errorf("Seal = %v, want domain.ErrSecretKeyMissing", err)
	}
	if _, err := b.Open([]byte("x"), nil); !errors.Is(err, domain.ErrSecretKeyMissing) {
		t.Errorf("Open = %v, want domain.ErrSecretKeyMissing", err)
	}
	if b.Current([]byte{1, 2, 3, 4, 5}) || b.CurrentKeyID() != "" {
		t.Error("a box without keys has a current key")
	}
	if err := b.SetKeys(); !errors.Is(err, domain.ErrSecretKeyMissing) {
		t.Errorf("SetKeys() = %v, want domain.ErrSecretKeyMissing", err)
	}
}

func TestBox_bad_keys_refused(t *testing.T) {
	t.Parallel()
	k := secretbox.NewKey()
	for name, keys := range map[string][][]byte{
		"short":     {k[:16]},
		"long":      {append(bytes.Clone(k), 0)},
		"repeated":  {k, secretbox.NewKey(), k},
		"empty_one": {k, nil},
	} {
		_, err := secretbox.New(keys...)
		if err == nil {
			t.Errorf("%s: New accepted the keys", name)
			continue
		}
		if strings.Contains(err.Error(), secretbox.EncodeKey(k)) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
}
