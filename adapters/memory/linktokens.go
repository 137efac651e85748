package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// LinkTokenStore is the in-memory ports.LinkTokenStore.
type LinkTokenStore struct{ s *Store }

var _ ports.LinkTokenStore = (*LinkTokenStore)(nil)

// NewLinkTokenStore returns a link-token store over a store of its own. As
// tokens must reference existing users, it is of little use alone: use
// NewStore and take Users and LinkTokens from it.
func NewLinkTokenStore() *LinkTokenStore { return NewStore().LinkTokens() }

// Issue implements ports.LinkTokenStore. Like the SQL foreign key, it
// returns domain.ErrUserNotFound when the token's user does not exist.
func (r *LinkTokenStore) Issue(ctx context.Context, t domain.LinkToken) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[t.UserID]; !ok && t.UserID != "" {
		return fmt.Errorf("issue link token: %w", domain.ErrUserNotFound)
	}
	if _, ok := s.links[t.Hash]; ok {
		return fmt.Errorf("issue link token: %w", errDuplicate)
	}
	s.links[t.Hash] = copyLinkToken(t)
	return nil
}

// Peek implements ports.LinkTokenStore.
func (r *LinkTokenStore) Peek(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	defer r.s.lock(ctx)()
	t, err := r.usable(hash, purpose, normTime(now))
	if err != nil {
		return domain.LinkToken{}, fmt.Errorf("peek link token: %w", err)
	}
	return copyLinkToken(t), nil
}

// usable returns the stored token with the hash when it is of purpose,
// unused and not expired at now; the caller holds the lock.
func (r *LinkTokenStore) usable(hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	t, ok := r.s.links[hash]
	if !ok || t.Purpose != purpose || t.UsedAt != nil || !now.Before(t.ExpiresAt) {
		return domain.LinkToken{}, domain.ErrInvalidLinkToken
	}
	return t, nil
}

// Use implements ports.LinkTokenStore under the store's lock, which makes
// concurrent uses of one token one at a time.
func (r *LinkTokenStore) Use(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	now = normTime(now)
	s := r.s
	defer s.lock(ctx)()
	t, err := r.usable(hash, purpose, now)
	if err != nil {
		return domain.LinkToken{}, fmt.Errorf("use link token: %w", err)
	}
	t.UsedAt = &now
	s.links[hash] = t
	return copyLinkToken(t), nil
}

// Void implements ports.LinkTokenStore.
func (r *LinkTokenStore) Void(ctx context.Context, user domain.UserID, purpose domain.LinkPurpose, now time.Time) error {
	now = normTime(now)
	s := r.s
	defer s.lock(ctx)()
	for hash, t := range s.links {
		if t.UserID == user && t.Purpose == purpose && t.UsedAt == nil {
			t.UsedAt = normTimePtr(&now)
			s.links[hash] = t
		}
	}
	return nil
}

// UseCode implements ports.LinkTokenStore under the store's lock.
func (r *LinkTokenStore) UseCode(ctx context.Context, email domain.Email, codeHash string, now time.Time) (domain.LinkToken, error) {
	now = normTime(now)
	s := r.s
	defer s.lock(ctx)()
	for hash, t := range s.links {
		if t.Email == email && t.Purpose == domain.LinkEmailSignIn && t.UsedAt == nil && now.Before(t.ExpiresAt) &&
			codeHash != "" && t.CodeHash == codeHash {
			t.UsedAt = normTimePtr(&now)
			s.links[hash] = t
			return copyLinkToken(t), nil
		}
	}
	for hash, t := range s.links {
		if t.Email == email && t.Purpose == domain.LinkEmailSignIn && t.UsedAt == nil && now.Before(t.ExpiresAt) {
			t.CodeFailures++
			if t.CodeFailures >= domain.MaxEmailCodeFailures {
				t.UsedAt = normTimePtr(&now)
			}
			s.links[hash] = t
		}
	}
	return domain.LinkToken{}, fmt.Errorf("use email code: %w", domain.ErrInvalidLinkToken)
}

// VoidTo implements ports.LinkTokenStore.
func (r *LinkTokenStore) VoidTo(ctx context.Context, email domain.Email, purpose domain.LinkPurpose, now time.Time) error {
	now = normTime(now)
	s := r.s
	defer s.lock(ctx)()
	for hash, t := range s.links {
		if t.Email == email && t.Purpose == purpose && t.UsedAt == nil {
			t.UsedAt = normTimePtr(&now)
			s.links[hash] = t
		}
	}
	return nil
}

// RequestedTo implements ports.LinkTokenStore.
func (r *LinkTokenStore) RequestedTo(ctx context.Context, email domain.Email, since time.Time) (int, time.Time, error) {
	since = normTime(since)
	s := r.s
	defer s.lock(ctx)()
	n, last := 0, time.Time{}
	for _, t := range s.links {
		if t.UserID == "" && t.Email == email && t.Requested && !t.CreatedAt.Before(since) {
			n++
			if t.CreatedAt.After(last) {
				last = t.CreatedAt
			}
		}
	}
	return n, last, nil
}

// Requested implements ports.LinkTokenStore: the requested tokens created
// at or after since, used or not.
func (r *LinkTokenStore) Requested(ctx context.Context, user domain.UserID, since time.Time) (int, time.Time, error) {
	since = normTime(since)
	s := r.s
	defer s.lock(ctx)()
	n, last := 0, time.Time{}
	for _, t := range s.links {
		if t.UserID == user && t.Requested && !t.CreatedAt.Before(since) {
			n++
			if t.CreatedAt.After(last) {
				last = t.CreatedAt
			}
		}
	}
	return n, last, nil
}
