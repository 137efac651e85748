package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// PasskeyStore is the in-memory ports.PasskeyStore.
type PasskeyStore struct{ s *Store }

var _ ports.PasskeyStore = (*PasskeyStore)(nil)

// CreatePasskey implements ports.PasskeyStore.
func (r *PasskeyStore) CreatePasskey(ctx context.Context, p domain.Passkey) error {
	p = copyPasskey(p)
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[p.UserID]; !ok {
		return fmt.Errorf("create passkey: %w", domain.ErrUserNotFound)
	}
	if _, ok := s.passkeyByCredentialID(p.CredentialID); ok {
		return fmt.Errorf("create passkey: %w", domain.ErrPasskeyExists)
	}
	if _, ok := s.passkeys[p.ID]; ok {
		return fmt.Errorf("create passkey: id %w", errDuplicate)
	}
	s.passkeys[p.ID] = p
	return nil
}

// passkeyByCredentialID finds the passkey with the credential id; the
// caller holds the lock.
func (s *Store) passkeyByCredentialID(credentialID []byte) (domain.Passkey, bool) {
	for _, p := range s.passkeys {
		if bytes.Equal(p.CredentialID, credentialID) {
			return p, true
		}
	}
	return domain.Passkey{}, false
}

// Passkeys implements ports.PasskeyStore: oldest first, the id breaking
// ties.
func (r *PasskeyStore) Passkeys(ctx context.Context, user domain.UserID) ([]domain.Passkey, error) {
	s := r.s
	defer s.lock(ctx)()
	out := []domain.Passkey{}
	for _, p := range s.passkeys {
		if p.UserID == user {
			out = append(out, copyPasskey(p))
		}
	}
	slices.SortFunc(out, func(a, b domain.Passkey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// PasskeyByCredentialID implements ports.PasskeyStore.
func (r *PasskeyStore) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (domain.Passkey, error) {
	defer r.s.lock(ctx)()
	p, ok := r.s.passkeyByCredentialID(credentialID)
	if !ok {
		return domain.Passkey{}, fmt.Errorf("passkey by credential id: %w", domain.ErrPasskeyNotFound)
	}
	return copyPasskey(p), nil
}

// RecordPasskeyUse implements ports.PasskeyStore under the store's lock.
func (r *PasskeyStore) RecordPasskeyUse(ctx context.Context, id domain.PasskeyID, signCount uint32, credential []byte, at time.Time) (bool, error) {
	s := r.s
	defer s.lock(ctx)()
	p, ok := s.passkeys[id]
	forward := p.SignCount < signCount || p.SignCount == 0 && signCount == 0
	if !ok || !forward {
		return false, nil
	}
	p.SignCount = signCount
	p.Credential = append([]byte{}, credential...)
	p.LastUsedAt = normTimePtr(&at)
	s.passkeys[id] = p
	return true, nil
}

// RenamePasskey implements ports.PasskeyStore.
func (r *PasskeyStore) RenamePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID, name string) (domain.Passkey, error) {
	s := r.s
	defer s.lock(ctx)()
	p, ok := s.passkeys[id]
	if !ok || p.UserID != user {
		return domain.Passkey{}, fmt.Errorf("rename passkey: %w", domain.ErrPasskeyNotFound)
	}
	p.Name = name
	s.passkeys[id] = p
	return copyPasskey(p), nil
}

// DeletePasskey implements ports.PasskeyStore.
func (r *PasskeyStore) DeletePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID) error {
	s := r.s
	defer s.lock(ctx)()
	if p, ok := s.passkeys[id]; !ok || p.UserID != user {
		return fmt.Errorf("delete passkey: %w", domain.ErrPasskeyNotFound)
	}
	delete(s.passkeys, id)
	return nil
}

// DeletePasskeys implements ports.PasskeyStore.
func (r *PasskeyStore) DeletePasskeys(ctx context.Context, user domain.UserID) (int, error) {
	s := r.s
	defer s.lock(ctx)()
	n := 0
	for id, p := range s.passkeys {
		if p.UserID == user {
			delete(s.passkeys, id)
			n++
		}
	}
	return n, nil
}

// CreateCeremony implements ports.PasskeyStore. Like the SQL store, it
// drops the ceremonies that expired before c began, and returns
// domain.ErrUserNotFound when c names a user that does not exist.
func (r *PasskeyStore) CreateCeremony(ctx context.Context, c domain.PasskeyCeremony) error {
	c = copyCeremony(c)
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[c.UserID]; !ok && c.UserID != "" {
		return fmt.Errorf("create passkey ceremony: %w", domain.ErrUserNotFound)
	}
	for id, old := range s.ceremonies {
		if !old.ExpiresAt.After(c.CreatedAt) {
			delete(s.ceremonies, id)
		}
	}
	if _, ok := s.ceremonies[c.ID]; ok {
		return fmt.Errorf("create passkey ceremony: %w", errDuplicate)
	}
	s.ceremonies[c.ID] = c
	return nil
}

// TakeCeremony implements ports.PasskeyStore under the store's lock. A
// ceremony of another purpose, or expired, is left in place.
func (r *PasskeyStore) TakeCeremony(ctx context.Context, id string, purpose domain.CeremonyPurpose, now time.Time) (domain.PasskeyCeremony, error) {
	now = normTime(now)
	s := r.s
	defer s.lock(ctx)()
	c, ok := s.ceremonies[id]
	if !ok || c.Purpose != purpose || !now.Before(c.ExpiresAt) {
		return domain.PasskeyCeremony{}, fmt.Errorf("take passkey ceremony: %w", domain.ErrInvalidPasskey)
	}
	delete(s.ceremonies, id)
	return copyCeremony(c), nil
}
