package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// PersonalTokenStore is the in-memory ports.PersonalTokenStore.
type PersonalTokenStore struct{ s *Store }

var _ ports.PersonalTokenStore = (*PersonalTokenStore)(nil)

// PersonalTokens returns the store's personal access tokens.
func (s *Store) PersonalTokens() *PersonalTokenStore { return &PersonalTokenStore{s: s} }

func copyPersonalToken(t domain.PersonalToken) domain.PersonalToken {
	t.Scopes = slices.Clone(t.Scopes)
	t.CreatedAt, t.ExpiresAt, t.LastUsedAt = normTime(t.CreatedAt), normTime(t.ExpiresAt), normTime(t.LastUsedAt)
	if t.RevokedAt != nil {
		at := normTime(*t.RevokedAt)
		t.RevokedAt = &at
	}
	return t
}

// CreateToken implements ports.PersonalTokenStore.
func (r *PersonalTokenStore) CreateToken(ctx context.Context, t domain.PersonalToken, limit int) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[t.UserID]; !ok {
		return fmt.Errorf("create personal token: %w", domain.ErrUserNotFound)
	}
	live := 0
	for _, o := range s.personalTokens {
		if o.UserID == t.UserID && o.Live(t.CreatedAt) {
			live++
		}
	}
	if live >= limit {
		return fmt.Errorf("create personal token: %w", domain.ErrTokenLimit)
	}
	for _, o := range s.personalTokens {
		if o.ID == t.ID || o.Hash == t.Hash {
			return fmt.Errorf("create personal token: %w", errDuplicate)
		}
	}
	s.personalTokens[t.ID] = copyPersonalToken(t)
	return nil
}

// Tokens implements ports.PersonalTokenStore.
func (r *PersonalTokenStore) Tokens(ctx context.Context, user domain.UserID, now time.Time) ([]domain.PersonalToken, error) {
	s := r.s
	defer s.lock(ctx)()
	out := []domain.PersonalToken{}
	for _, t := range s.personalTokens {
		if t.UserID == user && t.Live(now) {
			out = append(out, copyPersonalToken(t))
		}
	}
	slices.SortFunc(out, func(a, b domain.PersonalToken) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmpString(string(b.ID), string(a.ID))
	})
	return out, nil
}

// TokenByHash implements ports.PersonalTokenStore.
func (r *PersonalTokenStore) TokenByHash(ctx context.Context, hash string) (domain.PersonalToken, domain.User, error) {
	s := r.s
	defer s.lock(ctx)()
	for _, t := range s.personalTokens {
		if t.Hash == hash {
			u, ok := s.users[t.UserID]
			if !ok {
				break
			}
			return copyPersonalToken(t), copyUser(u), nil
		}
	}
	return domain.PersonalToken{}, domain.User{}, domain.ErrPersonalTokenNotFound
}

// RevokeToken implements ports.PersonalTokenStore.
func (r *PersonalTokenStore) RevokeToken(ctx context.Context, user domain.UserID, id domain.PersonalTokenID, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	t, ok := s.personalTokens[id]
	if !ok || t.UserID != user || !t.Live(at) {
		return fmt.Errorf("revoke personal token: %w", domain.ErrPersonalTokenNotFound)
	}
	at = normTime(at)
	t.RevokedAt = &at
	s.personalTokens[id] = t
	return nil
}

// TouchToken implements ports.PersonalTokenStore.
func (r *PersonalTokenStore) TouchToken(ctx context.Context, id domain.PersonalTokenID, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	t, ok := s.personalTokens[id]
	if !ok || !t.LastUsedAt.Before(at.Add(-domain.PersonalTokenTouchInterval)) {
		return nil
	}
	t.LastUsedAt = normTime(at)
	s.personalTokens[id] = t
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
