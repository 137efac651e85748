package application_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// countingHasher is the fake hasher with its verifications counted, and
// optionally failing as a busy hasher does.
type countingHasher struct {
	fakeHasher
	verifies atomic.Int32
	busy     atomic.Bool // Verify is busy
	hashBusy atomic.Bool // Hash is busy
}

func (h *countingHasher) Hash(ctx context.Context, pw string) (string, error) {
	if h.hashBusy.Load() {
		return "", domain.ErrUnavailable
	}
	return h.fakeHasher.Hash(ctx, pw)
}

func (h *countingHasher) Verify(ctx context.Context, encoded, pw string) (bool, bool, error) {
	if h.busy.Load() {
		return false, false, domain.ErrUnavailable
	}
	h.verifies.Add(1)
	return h.fakeHasher.Verify(ctx, encoded, pw)
}

func withHasher(h *countingHasher) envOption {
	return func(_ *application.Config, d *application.Deps) { d.Hasher = h }
}

// race runs fn n times at once and returns the errors.
func race(n int, fn func() error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// outcomes counts wrong-password and locked answers, failing on others.
func outcomes(t *testing.T, errs []error) (invalid, locked int) {
	t.Helper()
	for _, err := range errs {
		switch _, tooMany := errors.AsType[*domain.TooManyAttemptsError](err); {
		case tooMany:
			locked++
		case errors.Is(err, domain.ErrInvalidCredentials):
			invalid++
		default:
			t.Fatalf("unexpected answer: %v", err)
		}
	}
	return invalid, locked
}

func TestAttack_concurrent_guesses_check_at_most_the_budget(t *testing.T) {
	t.Parallel()
	for _, email := range []string{"ada@example.com", "ghost@example.com"} {
		t.Run(email, func(t *testing.T) {
			t.Parallel()
			h := &countingHasher{}
			e := newEnv(t, withHasher(h))
			e.seed(t, "ada@example.com")
			before := h.verifies.Load() // the dummy hash is made, not verified
			errs := race(60, func() error {
				_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: "a wrong guess"})
				return err
			})
			invalid, locked := outcomes(t, errs)
			if checked := h.verifies.Load() - before; checked != domain.LoginFreeFailures || invalid != domain.LoginFreeFailures || locked != 60-domain.LoginFreeFailures {
				t.Fatalf("60 concurrent guesses: %d passwords checked, %d × invalid, %d × locked; want %d checked",
					checked, invalid, locked, domain.LoginFreeFailures)
			}
		})
	}
}

func TestAttack_concurrent_current_password_guesses_check_at_most_the_budget(t *testing.T) {
	t.Parallel()
	h := &countingHasher{}
	e := newEnv(t, withHasher(h))
	self, selfP := e.seed(t, "ada@example.com")
	errs := race(30, func() error {
		_, err := e.users.Update(ctx, selfP, self.ID.String(),
			application.UpdateInput{Password: ptr("another long secret"), CurrentPassword: ptr("a wrong guess")})
		return err
	})
	invalid, locked := outcomes(t, errs)
	if checked := h.verifies.Load(); checked != domain.LoginFreeFailures || invalid != domain.LoginFreeFailures || locked != 30-domain.LoginFreeFailures {
		t.Fatalf("30 concurrent guesses: %d checked, %d × invalid, %d × locked", checked, invalid, locked)
	}
}

// A check that could not be made is not a failure: a busy hasher (503)
// must not lock the account's owner out.
func TestLogin_unchecked_attempts_do_not_count(t *testing.T) {
	t.Parallel()
	h := &countingHasher{}
	e := newEnv(t, withHasher(h))
	self, selfP := e.seed(t, "ada@example.com")
	h.busy.Store(true)
	for range 2 * domain.LoginFreeFailures {
		_, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "a wrong guess"})
		wantErr(t, err, domain.ErrUnavailable)
		_, err = e.auth.Login(ctx, application.LoginInput{Email: "ghost@example.com", Password: "a wrong guess"})
		wantErr(t, err, domain.ErrUnavailable)
		_, err = e.users.Update(ctx, selfP, self.ID.String(), application.UpdateInput{CurrentPassword: ptr("a wrong guess")})
		wantErr(t, err, domain.ErrUnavailable)
	}
	for _, email := range []domain.Email{"ada@example.com", "ghost@example.com"} {
		if rec, _ := e.store.LoginAttempts().Get(ctx, email); rec.Failures != 0 {
			t.Errorf("%s: %d failures counted for checks never made", email, rec.Failures)
		}
	}
	h.busy.Store(false)
	login(t, e, "ada@example.com", seededPassword)
}

// The dummy hash of unknown emails is made on first use. A hasher busy
// with registrations at that moment must not make every later login for
// an unknown email fail fast: that would tell unknown emails apart.
func TestLogin_dummy_hash_is_made_again_after_a_busy_hasher(t *testing.T) {
	t.Parallel()
	h := &countingHasher{}
	e := newEnv(t, withHasher(h))
	h.hashBusy.Store(true)
	_, err := e.auth.Login(ctx, application.LoginInput{Email: "ghost@example.com", Password: "a wrong guess"})
	wantErr(t, err, domain.ErrUnavailable)
	h.hashBusy.Store(false)
	for range 3 {
		_, err = e.auth.Login(ctx, application.LoginInput{Email: "ghost@example.com", Password: "a wrong guess"})
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	// Made once: busy registrations later do not matter.
	h.hashBusy.Store(true)
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "ghost@example.com", Password: "a wrong guess"})
	wantErr(t, err, domain.ErrInvalidCredentials)
}
