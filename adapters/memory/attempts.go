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

// Get returns the record of email, a zero one (Failures 0) when there is
// none. It is not part of the port: tests use it to look inside.
func (r *LoginAttemptStore) Get(ctx context.Context, email domain.Email) (domain.LoginAttempts, error) {
	s := r.s
	defer s.lock(ctx)()
	if a, ok := s.attempts[email]; ok {
		return a, nil
	}
	return domain.LoginAttempts{Email: email}, nil
}

// Reserve implements ports.LoginAttemptStore with the domain's rule, under
// the store's lock.
func (r *LoginAttemptStore) Reserve(ctx context.Context, email domain.Email, at time.Time) (domain.LoginAttempts, error) {
	at = normTime(at)
	s := r.s
	defer s.lock(ctx)()
	a, ok := s.attempts[email]
	if !ok {
		a = domain.LoginAttempts{Email: email}
	}
	next, wait := a.Reserve(at)
	if wait > 0 {
		return domain.LoginAttempts{}, &domain.TooManyAttemptsError{RetryAfter: wait}
	}
	s.attempts[email] = next
	return next, nil
}

// Release implements ports.LoginAttemptStore.
func (r *LoginAttemptStore) Release(ctx context.Context, email domain.Email) error {
	s := r.s
	defer s.lock(ctx)()
	if a, ok := s.attempts[email]; ok && a.Failures > 0 {
		a.Failures--
		s.attempts[email] = a
	}
	return nil
}

// Reset implements ports.LoginAttemptStore.
func (r *LoginAttemptStore) Reset(ctx context.Context, email domain.Email) error {
	s := r.s
	defer s.lock(ctx)()
	delete(s.attempts, email)
	return nil
}
