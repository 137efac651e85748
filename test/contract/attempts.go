package contract

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// LoginAttemptStore runs the contract of ports.LoginAttemptStore.
func LoginAttemptStore(t *testing.T, newStore func(t *testing.T) ports.LoginAttemptStore) {
	const window = domain.LoginFailureWindow

	t.Run("unknown_email", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		got, err := store.Get(t.Context(), "nobody@example.com")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Failures != 0 || !got.LastFailureAt.IsZero() {
			t.Errorf("Get(unknown) = %+v, want a zero record", got)
		}
	})

	t.Run("record_failures", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		const email = domain.Email("ada@example.com")
		for i := 1; i <= 3; i++ {
			when := at(time.Duration(i)*time.Second + time.Duration(i)*time.Microsecond)
			got, err := store.RecordFailure(ctx, email, when, window)
			if err != nil {
				t.Fatalf("RecordFailure: %v", err)
			}
			checkAttempts(t, got, email, i, when)
		}
		got, err := store.Get(ctx, email)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		checkAttempts(t, got, email, 3, at(3*time.Second+3*time.Microsecond))

		// Counts are per email.
		got, err = store.RecordFailure(ctx, "bob@example.com", at(time.Minute), window)
		if err != nil {
			t.Fatalf("RecordFailure: %v", err)
		}
		checkAttempts(t, got, "bob@example.com", 1, at(time.Minute))
		if got, err = store.Get(ctx, email); err != nil {
			t.Fatalf("Get: %v", err)
		}
		checkAttempts(t, got, email, 3, at(3*time.Second+3*time.Microsecond))
	})

	t.Run("window_restarts_count", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		const email = domain.Email("ada@example.com")
		record := func(when time.Time, want int) {
			t.Helper()
			got, err := store.RecordFailure(ctx, email, when, window)
			if err != nil {
				t.Fatalf("RecordFailure: %v", err)
			}
			checkAttempts(t, got, email, want, when)
		}
		record(at(0), 1)
		record(at(time.Minute), 2)
		// A failure exactly one window after the last one still counts…
		record(at(time.Minute+window), 3)
		// …one a microsecond later starts over.
		record(at(time.Minute+2*window+time.Microsecond), 1)
		record(at(time.Minute+2*window+time.Second), 2)
	})

	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		const email = domain.Email("ada@example.com")
		for i := range 4 {
			if _, err := store.RecordFailure(ctx, email, at(time.Duration(i)*time.Second), window); err != nil {
				t.Fatalf("RecordFailure: %v", err)
			}
		}
		if err := store.Reset(ctx, email); err != nil {
			t.Fatalf("Reset: %v", err)
		}
		got, err := store.Get(ctx, email)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.Failures != 0 {
			t.Errorf("Get after Reset = %+v, want no failures", got)
		}
		got, err = store.RecordFailure(ctx, email, at(time.Minute), window)
		if err != nil {
			t.Fatalf("RecordFailure: %v", err)
		}
		checkAttempts(t, got, email, 1, at(time.Minute))
		if err := store.Reset(ctx, "nobody@example.com"); err != nil {
			t.Errorf("Reset(unknown): %v", err)
		}
	})

	t.Run("concurrent_failures", func(t *testing.T) {
		t.Parallel()
		ctx, store := t.Context(), newStore(t)
		const (
			email   = domain.Email("ada@example.com")
			workers = 20
		)
		counts := make([]int, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				got, err := store.RecordFailure(ctx, email, at(time.Second), window)
				counts[i], errs[i] = got.Failures, err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("RecordFailure: %v", err)
			}
		}
		got, err := store.Get(ctx, email)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		checkAttempts(t, got, email, workers, at(time.Second))
		// Each failure saw its own count: the increments were atomic.
		slices.Sort(counts)
		for i, c := range counts {
			if c != i+1 {
				t.Fatalf("counts returned = %v, want 1…%d once each", counts, workers)
			}
		}
	})
}

func checkAttempts(t *testing.T, got domain.LoginAttempts, email domain.Email, failures int, last time.Time) {
	t.Helper()
	if got.Email != email || got.Failures != failures || !got.LastFailureAt.Equal(last) {
		t.Errorf("attempts = {%s %d %s}, want {%s %d %s}",
			got.Email, got.Failures, got.LastFailureAt.Format(time.RFC3339Nano),
			email, failures, last.Format(time.RFC3339Nano))
	}
}
