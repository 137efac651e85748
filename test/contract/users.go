package contract

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// UserRepository runs the contract of ports.UserRepository against
// repositories made by newRepo.
func UserRepository(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	t.Run("create_and_get", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		u.Profiles = domain.Profiles{domain.ProfileCustomer, domain.ProfileAdmin}
		u.UpdatedAt = at(90 * time.Minute)
		mustCreate(t, repo, u)

		got, err := repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkUser(t, got, u)
		got, err = repo.ByEmail(ctx, u.Email)
		if err != nil {
			t.Fatalf("ByEmail: %v", err)
		}
		checkUser(t, got, u)

		if _, err := repo.ByID(ctx, domain.NewUserID(at(0))); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByID(unknown) error = %v, want ErrUserNotFound", err)
		}
		if _, err := repo.ByEmail(ctx, "nobody@example.com"); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByEmail(unknown) error = %v, want ErrUserNotFound", err)
		}
	})

	t.Run("values_are_copies", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		u.Profiles = domain.Profiles{domain.ProfileCustomer}
		want := u
		want.Profiles = slices.Clone(u.Profiles)
		mustCreate(t, repo, u)
		u.Profiles[0] = domain.ProfileAdmin // the caller's slice, after Create

		got, err := repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		got.Profiles[0] = domain.ProfileAdmin // the returned slice
		got, err = repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkUser(t, got, want)
	})

	t.Run("duplicate_email", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		first := newUser(at(0))
		first.Email = "ada@example.com"
		mustCreate(t, repo, first)

		// The domain normalises before the store sees an email, so the
		// store must treat the normalised forms as the same address.
		email, msg := domain.ParseEmail("  Ada@Example.COM ")
		if msg != "" {
			t.Fatalf("ParseEmail: %s", msg)
		}
		second := newUser(at(time.Second))
		second.Email = email
		if err := repo.Create(ctx, second); !errors.Is(err, domain.ErrEmailTaken) {
			t.Fatalf("Create(taken email) error = %v, want ErrEmailTaken", err)
		}
		if _, err := repo.ByID(ctx, second.ID); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("rejected user is stored: ByID error = %v", err)
		}
		got, err := repo.ByEmail(ctx, "ada@example.com")
		if err != nil {
			t.Fatalf("ByEmail: %v", err)
		}
		checkUser(t, got, first)
	})

	t.Run("list_order_and_limit", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		var users []domain.User
		for i := range 7 {
			users = append(users, newUser(at(time.Duration(i)*time.Hour)))
		}
		// Insert out of order: the list must follow the ids, not the
		// insertion order.
		for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
			mustCreate(t, repo, users[i])
		}
		want := ids(users)
		slices.Sort(want)

		got, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 3}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if !slices.Equal(ids(got), want[:3]) {
			t.Errorf("List(limit 3) = %v, want %v", ids(got), want[:3])
		}
		for _, u := range got {
			i := slices.IndexFunc(users, func(v domain.User) bool { return v.ID == u.ID })
			checkUser(t, u, users[i])
		}
		got, err = repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 100}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if !slices.Equal(ids(got), want) {
			t.Errorf("List(limit 100) = %v, want %v", ids(got), want)
		}
		got, err = repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 1}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if !slices.Equal(ids(got), want[:1]) {
			t.Errorf("List(limit 1) = %v, want %v", ids(got), want[:1])
		}
		// A cursor need not be the id of an existing user.
		got, err = repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{After: domain.UserID(strings.Repeat("f", 24)), Limit: 10}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("List(after ffff…) = %v, want none", ids(got))
		}
	})

	t.Run("list_pagination", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		const n = 3000
		users := make([]domain.User, n)
		for i := range users {
			// Three users a second: ids then share their time prefix and
			// sort by their random part.
			users[i] = newUser(at(time.Duration(i/3) * time.Second))
		}
		rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { users[i], users[j] = users[j], users[i] }) //nolint:gosec // G404: a fixed-seed shuffle of the insertion order, reproducible on purpose; no secret depends on it
		createAll(t, repo, users)
		want := ids(users)
		slices.Sort(want)

		var got []domain.UserID
		var after domain.UserID
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("pagination does not end")
			}
			page, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{After: after, Limit: 150}})
			if err != nil {
				t.Fatalf("List(after %s): %v", after, err)
			}
			if len(page) > 150 {
				t.Fatalf("List returned %d users, limit 150", len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, ids(page)...)
			after = page[len(page)-1].ID
		}
		if !isSortedUnique(got) || !slices.Equal(got, want) {
			t.Errorf("paging through %d users returned %d ids, sorted and unique: %v; want every id once in order",
				n, len(got), isSortedUnique(got))
		}
	})

	t.Run("list_email_filter", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		var users []domain.User
		for i := range 5 {
			u := newUser(at(time.Duration(i) * time.Minute))
			users = append(users, u)
			mustCreate(t, repo, u)
		}
		target := users[2]
		got, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 50}, Email: target.Email})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(got) != 1 {
			t.Fatalf("List(email) returned %v, want exactly %s", ids(got), target.ID)
		}
		checkUser(t, got[0], target)

		// Exact match: neither a prefix nor another case is a wildcard, nor
		// is a trailing space ignored (as a collation that pads would).
		for _, email := range []domain.Email{"nobody@example.com", target.Email[:10], domain.Email(strings.ToUpper(string(target.Email))), target.Email + " "} {
			got, err = repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 50}, Email: email})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if len(got) != 0 {
				t.Errorf("List(email %q) = %v, want none", email, ids(got))
			}
			if u, err := repo.ByEmail(ctx, email); !errors.Is(err, domain.ErrUserNotFound) {
				t.Errorf("ByEmail(%q) = %v, %v; want ErrUserNotFound", email, u.ID, err)
			}
		}
		// The cursor applies with the filter.
		got, err = repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{After: target.ID, Limit: 50}, Email: target.Email})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(got) != 0 {
			t.Errorf("List(email, after the match) = %v, want none", ids(got))
		}
	})

	t.Run("update", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		mustCreate(t, repo, u)

		want := u
		want.Name = "Ada Lovelace"
		want.Email = "ada@example.com"
		want.PasswordHash = "$2a$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234"
		want.Profiles = domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
		want.UpdatedAt = at(time.Hour + 7*time.Microsecond)
		got, err := repo.Update(ctx, u.ID, func(v *domain.User) error {
			checkUser(t, *v, u)
			v.Name, v.Email, v.PasswordHash = want.Name, want.Email, want.PasswordHash
			v.Profiles, v.UpdatedAt = want.Profiles, want.UpdatedAt
			// Neither may change, whatever fn does.
			v.ID = domain.NewUserID(at(time.Hour))
			v.CreatedAt = at(time.Hour)
			return nil
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		checkUser(t, got, want)
		stored, err := repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkUser(t, stored, want)
		if _, err := repo.ByEmail(ctx, u.Email); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByEmail(old email) error = %v, want ErrUserNotFound", err)
		}
		if stored, err = repo.ByEmail(ctx, want.Email); err != nil {
			t.Fatalf("ByEmail(new email): %v", err)
		}
		checkUser(t, stored, want)
		// The old email is free again.
		other := newUser(at(time.Minute))
		other.Email = u.Email
		mustCreate(t, repo, other)
	})

	t.Run("update_to_taken_email", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		a, b := newUser(at(0)), newUser(at(time.Second))
		mustCreate(t, repo, a)
		mustCreate(t, repo, b)
		_, err := repo.Update(ctx, b.ID, func(v *domain.User) error {
			v.Email = a.Email
			v.Name = "changed"
			return nil
		})
		if !errors.Is(err, domain.ErrEmailTaken) {
			t.Fatalf("Update(taken email) error = %v, want ErrEmailTaken", err)
		}
		got, err := repo.ByID(ctx, b.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkUser(t, got, b)
	})

	t.Run("update_missing", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		called := false
		_, err := repo.Update(ctx, domain.NewUserID(at(0)), func(*domain.User) error {
			called = true
			return nil
		})
		if !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("Update(unknown id) error = %v, want ErrUserNotFound", err)
		}
		if called {
			t.Error("Update called fn for an unknown id")
		}
	})

	t.Run("update_fn_error", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		mustCreate(t, repo, u)
		errBoom := errors.New("boom")
		_, err := repo.Update(ctx, u.ID, func(v *domain.User) error {
			v.Name = "half-changed"
			v.Email = "half@example.com"
			return errBoom
		})
		if err != errBoom {
			t.Errorf("Update error = %v, want fn's error unchanged", err)
		}
		got, err := repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkUser(t, got, u)
	})

	t.Run("update_concurrent", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		u.Name = "_"
		mustCreate(t, repo, u)
		const workers = 20
		updateConcurrently(t, workers, "Update", func(i int) error {
			_, err := repo.Update(ctx, u.ID, func(v *domain.User) error {
				v.Name += string(rune('a' + i)) //nolint:gosec // G115: i < workers (20), so 'a'+i is a lowercase letter
				return nil
			})
			return err
		})
		got, err := repo.ByID(ctx, u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		for i := range workers {
			if c := strings.Count(got.Name, string(rune('a'+i))); c != 1 {
				t.Errorf("name %q holds update %c %d times, want once", got.Name, 'a'+i, c)
			}
		}
		if len(got.Name) != 1+workers {
			t.Errorf("name %q: %d updates kept, want %d", got.Name, len(got.Name)-1, workers)
		}
	})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u, keep := newUser(at(0)), newUser(at(time.Second))
		mustCreate(t, repo, u)
		mustCreate(t, repo, keep)
		if err := repo.Delete(ctx, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := repo.ByID(ctx, u.ID); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByID(deleted) error = %v, want ErrUserNotFound", err)
		}
		if _, err := repo.ByEmail(ctx, u.Email); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByEmail(deleted) error = %v, want ErrUserNotFound", err)
		}
		if err := repo.Delete(ctx, u.ID); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("second Delete error = %v, want ErrUserNotFound", err)
		}
		got, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if !slices.Equal(ids(got), []domain.UserID{keep.ID}) {
			t.Errorf("List after Delete = %v, want [%s]", ids(got), keep.ID)
		}
		// The email is free again.
		again := newUser(at(time.Minute))
		again.Email = u.Email
		mustCreate(t, repo, again)
	})

	t.Run("create_many", func(t *testing.T) {
		t.Parallel()
		createMany(t, newRepo)
	})

	listEmailPrefix(t, newRepo)
}

func mustCreate(t *testing.T, repo ports.UserRepository, u domain.User) {
	t.Helper()
	if err := repo.Create(t.Context(), u); err != nil {
		t.Fatalf("Create(%s): %v", u.ID, err)
	}
}

// createAll creates users from a few goroutines: it costs nothing in
// memory or on SQLite, whose single connection serialises them anyway, and
// hides the round trips on PostgreSQL.
func createAll(t *testing.T, repo ports.UserRepository, users []domain.User) {
	t.Helper()
	const workers = 4
	ctx := t.Context()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(users); i += workers {
				if err := repo.Create(ctx, users[i]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Create: %v", err)
	}
}
