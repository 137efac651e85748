package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStore is the in-memory ports.KeyStore. Like the SQL store it keeps
// each secret sealed by its SecretBox, with the key's id as associated
// data, and opens it on the way out, so that code tested against it meets
// the same errors (a secret key missing or unknown).
type KeyStore struct {
	s   *Store
	box ports.SecretBox
}

var _ ports.KeyStore = (*KeyStore)(nil)

// NewKeyStore returns a key store over a store of its own, sealing with box.
func NewKeyStore(box ports.SecretBox) *KeyStore { return NewStore().Keys(box) }

// Keys implements ports.KeyStore. A secret that does not open fails the
// whole read with the box's error.
func (r *KeyStore) Keys(ctx context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error) {
	s := r.s
	defer s.lock(ctx)()
	out := []domain.SigningKey{}
	for _, k := range s.keys {
		if k.Purpose != purpose {
			continue
		}
		secret, err := r.box.Open(k.Secret, []byte(k.ID))
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k.ID, err)
		}
		k = copyKey(k)
		k.Secret = secret
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b domain.SigningKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// AddKey implements ports.KeyStore: the secret is sealed before it is kept.
func (r *KeyStore) AddKey(ctx context.Context, k domain.SigningKey) error {
	sealed, err := r.box.Seal(k.Secret, []byte(k.ID))
	if err != nil {
		return fmt.Errorf("add key %q: %w", k.ID, err)
	}
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("add key %q: %w", k.ID, domain.ErrKeyExists)
	}
	k = copyKey(k)
	k.Secret = sealed
	s.keys[k.ID] = k
	return nil
}

// Reencrypt re-seals every secret that is not sealed under the box's
// current key and returns how many it changed; a secret that does not
// open changes nothing. It is the SQL store's, for the contract suite:
// the memory store is lost at exit, so it has no command.
func (r *KeyStore) Reencrypt(ctx context.Context) (int, error) {
	s := r.s
	defer s.lock(ctx)()
	resealed := map[string][]byte{}
	for id, k := range s.keys {
		secret, err := r.box.Open(k.Secret, []byte(id))
		if err != nil {
			return 0, fmt.Errorf("re-encrypt key %q: %w", id, err)
		}
		if r.box.Current(k.Secret) {
			continue
		}
		if resealed[id], err = r.box.Seal(secret, []byte(id)); err != nil {
			return 0, fmt.Errorf("re-encrypt key %q: %w", id, err)
		}
	}
	for id, sealed := range resealed {
		k := s.keys[id]
		k.Secret = sealed
		s.keys[id] = k
	}
	return len(resealed), nil
}
