package contract

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// createMany is the contract of UserRepository.CreateMany: all or nothing
// per call, ErrEmailTaken for an email stored already or given twice.
func createMany(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	// batch returns n new users with distinct emails; more than one
	// multi-row INSERT's worth on SQLite (142 rows) when n is 300.
	batch := func(n int, created time.Time) []domain.User {
		users := make([]domain.User, n)
		for i := range users {
			users[i] = newUser(created.Add(time.Duration(i) * time.Second))
			users[i].Profiles = domain.Profiles{domain.ProfileCustomer}
			if i%7 == 0 {
				users[i].Profiles = domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
			}
		}
		return users
	}
	// listAll returns every stored user, in id order.
	listAll := func(t *testing.T, repo ports.UserRepository) []domain.User {
		t.Helper()
		got, err := repo.List(t.Context(), ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10_000}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return got
	}

	t.Run("stores_every_user", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		users := batch(300, at(0))
		if err := repo.CreateMany(ctx, users); err != nil {
			t.Fatalf("CreateMany: %v", err)
		}
		for _, u := range users {
			got, err := repo.ByEmail(ctx, u.Email)
			if err != nil {
				t.Fatalf("ByEmail(%s): %v", u.Email, err)
			}
			checkUser(t, got, u)
		}
		want := ids(users)
		slices.Sort(want)
		if got := ids(listAll(t, repo)); !slices.Equal(got, want) {
			t.Errorf("List after CreateMany: %d ids, want the %d created, in order", len(got), len(want))
		}
		// A second call adds to the first.
		more := batch(3, at(time.Hour))
		if err := repo.CreateMany(ctx, more); err != nil {
			t.Fatalf("second CreateMany: %v", err)
		}
		if n := len(listAll(t, repo)); n != 303 {
			t.Errorf("%d users after two calls, want 303", n)
		}
	})

	t.Run("empty_is_a_no_op", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		if err := repo.CreateMany(ctx, nil); err != nil {
			t.Errorf("CreateMany(nil) = %v", err)
		}
		if err := repo.CreateMany(ctx, []domain.User{}); err != nil {
			t.Errorf("CreateMany(empty) = %v", err)
		}
		if n := len(listAll(t, repo)); n != 0 {
			t.Errorf("%d users stored, want none", n)
		}
	})

	for _, tc := range []struct {
		name string
		// spoil makes users unstorable; existing has been stored before.
		spoil func(users []domain.User, existing domain.User)
	}{
		{"email_stored_already", func(users []domain.User, existing domain.User) {
			users[250].Email = existing.Email
		}},
		{"email_twice_in_the_call", func(users []domain.User, _ domain.User) {
			users[250].Email = users[10].Email
		}},
	} {
		t.Run("all_or_nothing_"+tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, repo := t.Context(), newRepo(t)
			existing := newUser(at(-time.Hour))
			mustCreate(t, repo, existing)
			users := batch(300, at(0))
			tc.spoil(users, existing)

			err := repo.CreateMany(ctx, users)
			if !errors.Is(err, domain.ErrEmailTaken) {
				t.Fatalf("CreateMany = %v, want ErrEmailTaken", err)
			}
			if got := ids(listAll(t, repo)); !slices.Equal(got, []domain.UserID{existing.ID}) {
				t.Fatalf("after a failed CreateMany the store holds %d users, want only the one before it", len(got))
			}
			for _, u := range []domain.User{users[0], users[299]} {
				if _, err := repo.ByID(ctx, u.ID); !errors.Is(err, domain.ErrUserNotFound) {
					t.Errorf("ByID(%s) after a failed CreateMany = %v, want ErrUserNotFound", u.ID, err)
				}
			}
			got, err := repo.ByEmail(ctx, existing.Email)
			if err != nil {
				t.Fatalf("ByEmail(existing): %v", err)
			}
			checkUser(t, got, existing)

			// Without the spoilt user the same call succeeds.
			users = slices.Delete(users, 250, 251)
			if err := repo.CreateMany(ctx, users); err != nil {
				t.Fatalf("CreateMany without the clash: %v", err)
			}
			if n := len(listAll(t, repo)); n != 300 {
				t.Errorf("%d users, want 300", n)
			}
		})
	}

	t.Run("emails_compare_normalised", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		first := newUser(at(0))
		first.Email = "grace@example.com"
		mustCreate(t, repo, first)
		email, msg := domain.ParseEmail(" Grace@EXAMPLE.com")
		if msg != "" {
			t.Fatalf("ParseEmail: %s", msg)
		}
		u := newUser(at(time.Second))
		u.Email = email
		if err := repo.CreateMany(ctx, []domain.User{u}); !errors.Is(err, domain.ErrEmailTaken) {
			t.Errorf("CreateMany(%s) = %v, want ErrEmailTaken", fmt.Sprint(email), err)
		}
	})
}
