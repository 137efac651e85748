package contract

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// LoginAttemptStore runs the contract of ports.LoginAttemptStore: the
// domain's lock-out (domain.LoginAttempts.Reserve), applied atomically.
func LoginAttemptStore(t *testing.T, newStore func(t *testing.T) ports.LoginAttemptStore) {
	const (
		email  = domain.Email("ada@example.com")
		budget = domain.LoginFreeFailures
	)

	t.Run("reservations_count_up_front_until_locked", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		for i := 1; i <= budget; i++ {
			when := at(time.Duration(i)*time.Second + time.Duration(i)*time.Microsecond)
			checkAttempts(t, reserve(t, store, email, when), email, i, when)
		}
		last := at(budget*time.Second + budget*time.Microsecond)
		// Locked: refused with the wait, whatever the password would be.
		wantLocked(t, store, email, last.Add(10*time.Second), domain.LoginBaseDelay-10*time.Second)
		// Counts are per email.
		checkAttempts(t, reserve(t, store, "bob@example.com", at(time.Minute)), "bob@example.com", 1, at(time.Minute))
		if _, err := store.Reserve(ctx, email, last.Add(time.Second)); err == nil {
			t.Fatal("another email's reservation unlocked ada's")
		}
	})

	t.Run("refused_reservations_count_nothing", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		for range budget {
			reserve(t, store, email, at(0))
		}
		for i := range 10 {
			wantLocked(t, store, email, at(time.Duration(i)*time.Second), domain.LoginDelay(budget)-time.Duration(i)*time.Second)
		}
		// The delay runs from the last counted failure, and the next
		// failure doubles it.
		checkAttempts(t, reserve(t, store, email, at(domain.LoginDelay(budget))), email, budget+1, at(domain.LoginDelay(budget)))
		wantLocked(t, store, email, at(domain.LoginDelay(budget)), domain.LoginDelay(budget+1))
	})

	t.Run("delay_caps_at_the_maximum", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		now := at(0)
		for i := 1; i <= budget+12; i++ {
			checkAttempts(t, reserve(t, store, email, now), email, i, now)
			if delay := domain.LoginDelay(i); delay > 0 {
				wantLocked(t, store, email, now, delay)
				now = now.Add(delay)
				wantLocked(t, store, email, now.Add(-time.Microsecond), time.Microsecond)
			}
		}
		wantLocked(t, store, email, now.Add(-domain.LoginMaxDelay), domain.LoginMaxDelay)
	})

	t.Run("window_restarts_count", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		const window = domain.LoginFailureWindow
		checkAttempts(t, reserve(t, store, email, at(0)), email, 1, at(0))
		checkAttempts(t, reserve(t, store, email, at(time.Minute)), email, 2, at(time.Minute))
		// A check exactly one window after the last failure still counts…
		checkAttempts(t, reserve(t, store, email, at(time.Minute+window)), email, 3, at(time.Minute+window))
		// …one a microsecond later starts over.
		checkAttempts(t, reserve(t, store, email, at(time.Minute+2*window+time.Microsecond)), email, 1, at(time.Minute+2*window+time.Microsecond))
		// So does a locked email, a window after its last failure.
		const carol = domain.Email("carol@example.com")
		for range budget {
			reserve(t, store, carol, at(0))
		}
		wantLocked(t, store, carol, at(0), domain.LoginBaseDelay)
		checkAttempts(t, reserve(t, store, carol, at(window+time.Second)), carol, 1, at(window+time.Second))
	})

	t.Run("lagging_clock_does_not_move_the_last_failure_back", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		reserve(t, store, email, at(time.Minute))
		checkAttempts(t, reserve(t, store, email, at(time.Minute-time.Second)), email, 2, at(time.Minute))
	})

	t.Run("release_gives_one_back", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		for range budget {
			reserve(t, store, email, at(0))
		}
		// The last check was never made: it is given back, and the
		// email is not locked.
		if err := store.Release(ctx, email); err != nil {
			t.Fatalf("Release: %v", err)
		}
		checkAttempts(t, reserve(t, store, email, at(time.Second)), email, budget, at(time.Second))
		for range budget + 2 {
			if err := store.Release(ctx, email); err != nil {
				t.Fatalf("Release: %v", err)
			}
		}
		// Never below zero.
		checkAttempts(t, reserve(t, store, email, at(2*time.Second)), email, 1, at(2*time.Second))
		if err := store.Release(ctx, "nobody@example.com"); err != nil {
			t.Errorf("Release(unknown): %v", err)
		}
	})

	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		for i := range budget {
			reserve(t, store, email, at(time.Duration(i)*time.Second))
		}
		if err := store.Reset(ctx, email); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		checkAttempts(t, reserve(t, store, email, at(time.Minute)), email, 1, at(time.Minute))
		if err := store.Reset(ctx, "nobody@example.com"); err != nil {
			t.Errorf("Reset(unknown): %v", err)
		}
	})

	t.Run("concurrent_reservations_admit_exactly_the_budget", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		const workers = 40
		counts := make([]int, workers)
		errs := make([]error, workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				<-start
				got, err := store.Reserve(ctx, email, at(time.Second))
				counts[i], errs[i] = got.Failures, err
			})
		}
		close(start)
		wg.Wait()
		var admitted []int
		for i, err := range errs {
			if _, locked := errors.AsType[*domain.TooManyAttemptsError](err); locked {
				continue
			}
			if err != nil {
				t.Fatalf("Reserve: %v", err)
			}
			admitted = append(admitted, counts[i])
		}
		// Each admitted check saw its own count: the budget, once each.
		slices.Sort(admitted)
		want := make([]int, budget)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(admitted, want) {
			t.Fatalf("%d of %d concurrent reservations admitted with counts %v, want %v", len(admitted), workers, admitted, want)
		}
		wantLocked(t, store, email, at(time.Second), domain.LoginBaseDelay)
	})
}

// reserve reserves a check and fails the test unless it is admitted.
func reserve(t *testing.T, store ports.LoginAttemptStore, email domain.Email, when time.Time) domain.LoginAttempts {
	t.Helper()
	got, err := store.Reserve(t.Context(), email, when)
	if err != nil {
		t.Fatalf("Reserve(%s, %s): %v", email, when.Format(time.RFC3339Nano), err)
	}
	return got
}

// wantLocked reserves a check and fails the test unless it is refused
// with the wait.
func wantLocked(t *testing.T, store ports.LoginAttemptStore, email domain.Email, when time.Time, wait time.Duration) {
	t.Helper()
	_, err := store.Reserve(t.Context(), email, when)
	tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err)
	if !ok || tooMany.RetryAfter != wait {
		t.Fatalf("Reserve(%s, %s) = %v, want locked for %v", email, when.Format(time.RFC3339Nano), err, wait)
	}
}

func checkAttempts(t *testing.T, got domain.LoginAttempts, email domain.Email, failures int, last time.Time) {
	t.Helper()
	if got.Email != email || got.Failures != failures || !got.LastFailureAt.Equal(last) {
		t.Errorf("attempts = {%s %d %s}, want {%s %d %s}",
			got.Email, got.Failures, got.LastFailureAt.Format(time.RFC3339Nano),
			email, failures, last.Format(time.RFC3339Nano))
	}
}
