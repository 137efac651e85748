package contract

import (
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newChallenge returns an mfaToken's record for u, made at created.
func newChallenge(u domain.User, created time.Time) domain.MFAChallenge {
	_, hash := domain.NewMFAToken()
	return domain.MFAChallenge{Hash: hash, UserID: u.ID, Email: u.Email, CreatedAt: created, ExpiresAt: created.Add(domain.MFAChallengeTTL)}
}

func checkChallenge(t *testing.T, got, want domain.MFAChallenge) {
	t.Helper()
	if got.Hash != want.Hash || got.UserID != want.UserID || got.Email != want.Email || got.FirstFactor != want.FirstFactor ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) ||
		got.Failures != want.Failures || !sameTimePtr(got.UsedAt, want.UsedAt) {
		t.Errorf("mfa challenge mismatch:\n got %+v (used %s)\nwant %+v (used %s)", got, fmtTimePtr(got.UsedAt), want, fmtTimePtr(want.UsedAt))
	}
}

// MFAChallengeStore runs the contract of ports.MFAChallengeStore.
// newStores returns a user repository and a challenge store sharing one
// empty storage, since challenges belong to users.
func MFAChallengeStore(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.MFAChallengeStore)) {
	setup := func(t *testing.T) (ports.UserRepository, ports.MFAChallengeStore, domain.User) {
		t.Helper()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		return users, store, u
	}
	create := func(t *testing.T, store ports.MFAChallengeStore, c domain.MFAChallenge) {
		t.Helper()
		if err := store.CreateChallenge(t.Context(), c); err != nil {
			t.Fatalf("CreateChallenge: %v", err)
		}
	}
	// invalid checks that every method refuses the challenge at now.
	invalid := func(t *testing.T, store ports.MFAChallengeStore, hash string, now time.Time, why string) {
		t.Helper()
		ctx := t.Context()
		if got, err := store.Challenge(ctx, hash, now); !errors.Is(err, domain.ErrInvalidMFAToken) {
			t.Errorf("Challenge(%s) = %+v, %v; want ErrInvalidMFAToken", why, got, err)
		}
		if got, err := store.FailChallenge(ctx, hash, now); !errors.Is(err, domain.ErrInvalidMFAToken) {
			t.Errorf("FailChallenge(%s) = %+v, %v; want ErrInvalidMFAToken", why, got, err)
		}
		if got, err := store.UseChallenge(ctx, hash, now); !errors.Is(err, domain.ErrInvalidMFAToken) {
			t.Errorf("UseChallenge(%s) = %+v, %v; want ErrInvalidMFAToken", why, got, err)
		}
	}

	t.Run("create_read_use_once", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newChallenge(u, at(time.Minute+3*time.Microsecond))
		create(t, store, c)
		got, err := store.Challenge(t.Context(), c.Hash, at(2*time.Minute))
		if err != nil {
			t.Fatalf("Challenge: %v", err)
		}
		checkChallenge(t, got, c)
		now := at(3*time.Minute + 7*time.Microsecond)
		got, err = store.UseChallenge(t.Context(), c.Hash, now)
		if err != nil {
			t.Fatalf("UseChallenge: %v", err)
		}
		c.UsedAt = &now
		checkChallenge(t, got, c)
		invalid(t, store, c.Hash, now, "a used token")
	})

	t.Run("keeps_the_first_factor", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		for _, first := range []string{"", domain.MethodPassword, domain.MethodFederated} {
			c := newChallenge(u, at(0))
			c.FirstFactor = first
			create(t, store, c)
			got, err := store.Challenge(t.Context(), c.Hash, at(time.Minute))
			if err != nil {
				t.Fatalf("Challenge: %v", err)
			}
			checkChallenge(t, got, c)
		}
	})

	t.Run("unknown_and_expired", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newChallenge(u, at(0))
		create(t, store, c)
		_, unknown := domain.NewMFAToken()
		invalid(t, store, unknown, at(time.Minute), "an unknown hash")
		invalid(t, store, c.Hash, c.ExpiresAt, "at its expiry")
		invalid(t, store, c.Hash, c.ExpiresAt.Add(time.Hour), "after its expiry")
		// None of these counted or used it.
		got, err := store.UseChallenge(t.Context(), c.Hash, c.ExpiresAt.Add(-time.Microsecond))
		if err != nil || got.Failures != 0 {
			t.Errorf("UseChallenge(a microsecond before expiry) = %d failures, %v; want 0", got.Failures, err)
		}
	})

	t.Run("unknown_user", func(t *testing.T) {
		t.Parallel()
		_, store := newStores(t)
		c := newChallenge(newUser(at(0)), at(0))
		if err := store.CreateChallenge(t.Context(), c); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreateChallenge(for an unknown user) = %v, want ErrUserNotFound", err)
		}
		invalid(t, store, c.Hash, at(time.Minute), "a refused challenge")
	})

	t.Run("failures_void_it", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newChallenge(u, at(0))
		other := newChallenge(u, at(0))
		create(t, store, c)
		create(t, store, other)
		for i := 1; i <= domain.MFAChallengeMaxFailures; i++ {
			got, err := store.FailChallenge(t.Context(), c.Hash, at(time.Duration(i)*time.Second))
			if err != nil {
				t.Fatalf("FailChallenge %d: %v", i, err)
			}
			want := c
			want.Failures = i
			checkChallenge(t, got, want)
		}
		invalid(t, store, c.Hash, at(time.Minute), "a token voided by wrong codes")
		// Another token of the same login is its own.
		if got, err := store.Challenge(t.Context(), other.Hash, at(time.Minute)); err != nil || got.Failures != 0 {
			t.Errorf("Challenge(another token) = %d failures, %v; want 0", got.Failures, err)
		}
	})

	t.Run("concurrent_failures", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newChallenge(u, at(0))
		create(t, store, c)
		const workers = 3
		if n := countTrue(t, workers, func(int) (bool, error) {
			_, err := store.FailChallenge(t.Context(), c.Hash, at(time.Minute))
			return err == nil, err
		}); n != workers {
			t.Errorf("%d of %d concurrent failures counted", n, workers)
		}
		got, err := store.Challenge(t.Context(), c.Hash, at(time.Minute))
		if err != nil || got.Failures != workers {
			t.Errorf("Challenge after %d concurrent failures = %d failures, %v", workers, got.Failures, err)
		}
		// Never past the limit.
		const more = 8
		n := countTrue(t, more, func(int) (bool, error) {
			_, err := store.FailChallenge(t.Context(), c.Hash, at(time.Minute))
			if errors.Is(err, domain.ErrInvalidMFAToken) {
				return false, nil
			}
			return err == nil, err
		})
		if n != domain.MFAChallengeMaxFailures-workers {
			t.Errorf("%d of %d further failures counted, want %d", n, more, domain.MFAChallengeMaxFailures-workers)
		}
		invalid(t, store, c.Hash, at(time.Minute), "a token voided by concurrent wrong codes")
	})

	t.Run("concurrent_use", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newChallenge(u, at(0))
		create(t, store, c)
		const workers = 16
		if wins := countTrue(t, workers, func(i int) (bool, error) {
			_, err := store.UseChallenge(t.Context(), c.Hash, at(time.Duration(i+1)*time.Second))
			if errors.Is(err, domain.ErrInvalidMFAToken) {
				return false, nil
			}
			return err == nil, err
		}); wins != 1 {
			t.Errorf("%d of %d concurrent uses of one token succeeded, want 1", wins, workers)
		}
	})

	t.Run("deleted_with_the_user", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		c := newChallenge(u, at(0))
		create(t, store, c)
		if err := users.Delete(t.Context(), u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		invalid(t, store, c.Hash, at(time.Minute), "the token of a deleted user")
	})
}
