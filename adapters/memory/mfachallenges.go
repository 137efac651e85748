package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// MFAChallengeStore is the in-memory ports.MFAChallengeStore.
type MFAChallengeStore struct{ s *Store }

var _ ports.MFAChallengeStore = (*MFAChallengeStore)(nil)

// CreateChallenge implements ports.MFAChallengeStore. Like the SQL store,
// it drops the challenges that expired before c was created, and returns
// domain.ErrUserNotFound when c's user does not exist.
func (r *MFAChallengeStore) CreateChallenge(ctx context.Context, c domain.MFAChallenge) error {
	c = copyMFAChallenge(c)
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[c.UserID]; !ok {
		return fmt.Errorf("create mfa challenge: %w", domain.ErrUserNotFound)
	}
	for hash, old := range s.challenges {
		if !old.ExpiresAt.After(c.CreatedAt) {
			delete(s.challenges, hash)
		}
	}
	if _, ok := s.challenges[c.Hash]; ok {
		return fmt.Errorf("create mfa challenge: %w", errDuplicate)
	}
	s.challenges[c.Hash] = c
	return nil
}

// Challenge implements ports.MFAChallengeStore.
func (r *MFAChallengeStore) Challenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	defer r.s.lock(ctx)()
	c, err := r.usable(hash, normTime(now))
	if err != nil {
		return domain.MFAChallenge{}, fmt.Errorf("mfa challenge: %w", err)
	}
	return copyMFAChallenge(c), nil
}

// usable returns the stored challenge with the hash when it is usable at
// now; the caller holds the lock.
func (r *MFAChallengeStore) usable(hash string, now time.Time) (domain.MFAChallenge, error) {
	c, ok := r.s.challenges[hash]
	if !ok || !c.Usable(now) {
		return domain.MFAChallenge{}, domain.ErrInvalidMFAToken
	}
	return c, nil
}

// FailChallenge implements ports.MFAChallengeStore under the store's
// lock, which counts concurrent failures one at a time.
func (r *MFAChallengeStore) FailChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	defer r.s.lock(ctx)()
	c, err := r.usable(hash, normTime(now))
	if err != nil {
		return domain.MFAChallenge{}, fmt.Errorf("fail mfa challenge: %w", err)
	}
	c.Failures++
	r.s.challenges[hash] = c
	return copyMFAChallenge(c), nil
}

// UseChallenge implements ports.MFAChallengeStore under the store's lock.
func (r *MFAChallengeStore) UseChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	now = normTime(now)
	defer r.s.lock(ctx)()
	c, err := r.usable(hash, now)
	if err != nil {
		return domain.MFAChallenge{}, fmt.Errorf("use mfa challenge: %w", err)
	}
	c.UsedAt = &now
	r.s.challenges[hash] = c
	return copyMFAChallenge(c), nil
}
