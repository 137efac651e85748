package memory

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// LoginAttemptStore is the in-memory ports.LoginAttemptStore. Being in one
// process, it is shared by one node only: fine for tests and single-node
// demos, not for a deployment.
type LoginAttemptStore struct{ s *Store }

var _ ports.LoginAttemptStore = (*LoginAttemptStore)(nil)

// NewLoginAttemptStore returns a login-attempt store over a store of its own.
func NewLoginAttemptStore() *LoginAttemptStore { return NewStore().LoginAttempts() }

// Get implements ports.LoginAttemptStore.
func (r *LoginAttemptStore) Get(_ context.Context, email domain.Email) (domain.LoginAttempts, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.attempts[email]; ok {
		return a, nil
	}
	return domain.LoginAttempts{Email: email}, nil
}

// RecordFailure implements ports.LoginAttemptStore. The last-failure time
// never moves backwards, so a failure reported late by a node with a
// lagging clock cannot shorten a lock-out.
func (r *LoginAttemptStore) RecordFailure(_ context.Context, email domain.Email, at time.Time, window time.Duration) (domain.LoginAttempts, error) {
	at = normTime(at)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.attempts[email]
	switch {
	case !ok || a.LastFailureAt.Before(at.Add(-window)):
		a = domain.LoginAttempts{Email: email, Failures: 1, LastFailureAt: at}
	default:
		a.Failures++
		if at.After(a.LastFailureAt) {
			a.LastFailureAt = at
		}
	}
	s.attempts[email] = a
	return a, nil
}

// Reset implements ports.LoginAttemptStore.
func (r *LoginAttemptStore) Reset(_ context.Context, email domain.Email) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.attempts, email)
	return nil
}
