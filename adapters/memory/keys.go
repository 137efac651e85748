package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStore is the in-memory ports.KeyStore.
type KeyStore struct{ s *Store }

var _ ports.KeyStore = (*KeyStore)(nil)

// NewKeyStore returns a key store over a store of its own.
func NewKeyStore() *KeyStore { return NewStore().Keys() }

// Keys implements ports.KeyStore.
func (r *KeyStore) Keys(_ context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []domain.SigningKey{}
	for _, k := range s.keys {
		if k.Purpose == purpose {
			out = append(out, copyKey(k))
		}
	}
	slices.SortFunc(out, func(a, b domain.SigningKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// AddKey implements ports.KeyStore.
func (r *KeyStore) AddKey(_ context.Context, k domain.SigningKey) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k.ID]; ok {
		return fmt.Errorf("add key %q: %w", k.ID, domain.ErrKeyExists)
	}
	s.keys[k.ID] = copyKey(k)
	return nil
}
