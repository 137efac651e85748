package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Ways an enabled admin stops being one, and the changes that keep one.
var (
	demote  = func(u *domain.User) error { u.Profiles = domain.Profiles{domain.ProfileCustomer}; return nil }
	disable = func(u *domain.User) error { u.Disabled = true; return nil }
	enable  = func(u *domain.User) error { u.Disabled = false; return nil }
	rename  = func(u *domain.User) error { u.Name = "Renamed"; return nil }
)

// newAdmin returns a new enabled admin created at created.
func newAdmin(created time.Time) domain.User {
	u := newUser(created)
	u.Profiles = domain.Profiles{domain.ProfileAdmin}
	return u
}

// UserAccountStatus runs the contract of the account status of
// ports.UserRepository against repositories made by newRepo:
// EmailVerified, Disabled and MFAEnabled are stored and read by every
// method, and the last-admin
// rule holds (Update and Delete refuse, writing nothing, to leave no
// enabled admin, and concurrent changes never leave none).
func UserAccountStatus(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	t.Run("stored", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		var users []domain.User
		for i := range 4 {
			u := newUser(at(time.Duration(i) * time.Second))
			u.EmailVerified, u.Disabled, u.MFAEnabled = i&1 != 0, i&2 != 0, i == 1 || i == 2
			users = append(users, u)
		}
		mustCreate(t, repo, users[0])
		mustCreate(t, repo, users[1])
		if err := repo.CreateMany(ctx, users[2:]); err != nil {
			t.Fatalf("CreateMany: %v", err)
		}
		for _, u := range users {
			checkStored(t, repo, u)
			got, err := repo.ByEmail(ctx, u.Email)
			if err != nil {
				t.Fatalf("ByEmail: %v", err)
			}
			checkUser(t, got, u)
		}
		listed, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10}})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, got := range listed {
			want := users[slices.IndexFunc(users, func(u domain.User) bool { return u.ID == got.ID })]
			checkUser(t, got, want)
		}
		// Update writes them all, both ways.
		for i, u := range users {
			want := u
			want.EmailVerified, want.Disabled, want.MFAEnabled = !u.EmailVerified, !u.Disabled, !u.MFAEnabled
			got, err := repo.Update(ctx, u.ID, func(v *domain.User) error {
				checkUser(t, *v, u)
				v.EmailVerified, v.Disabled, v.MFAEnabled = want.EmailVerified, want.Disabled, want.MFAEnabled
				return nil
			})
			if err != nil {
				t.Fatalf("Update(%d): %v", i, err)
			}
			checkUser(t, got, want)
			checkStored(t, repo, want)
		}
	})

	t.Run("last_admin", func(t *testing.T) {
		t.Parallel()
		lastAdmin(t, newRepo)
	})
}

// lastAdmin is the contract of the last-admin rule of UserRepository.
func lastAdmin(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	t.Run("update_refused", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		admin, customer := newAdmin(at(0)), newUser(at(time.Second))
		mustCreate(t, repo, admin)
		mustCreate(t, repo, customer)
		for name, fn := range map[string]func(*domain.User) error{
			"demote":  demote,
			"disable": disable,
			"demote_and_rename": func(u *domain.User) error {
				u.Name, u.Email = "Changed", "changed@example.com"
				return demote(u)
			},
		} {
			if _, err := repo.Update(ctx, admin.ID, fn); !errors.Is(err, domain.ErrLastAdmin) {
				t.Errorf("Update(%s the last enabled admin) error = %v, want ErrLastAdmin", name, err)
			}
			checkStored(t, repo, admin)
		}
		// A change that keeps the admin an enabled admin is no concern of
		// the rule, nor is any change of another user.
		want := admin
		want.Name = "Renamed"
		if _, err := repo.Update(ctx, admin.ID, rename); err != nil {
			t.Fatalf("Update(rename the last admin): %v", err)
		}
		checkStored(t, repo, want)
		if _, err := repo.Update(ctx, customer.ID, disable); err != nil {
			t.Errorf("Update(disable a customer): %v", err)
		}
	})

	t.Run("delete_refused", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		a, b := newAdmin(at(0)), newAdmin(at(time.Second))
		mustCreate(t, repo, a)
		mustCreate(t, repo, b)
		if err := repo.Delete(ctx, a.ID); err != nil {
			t.Fatalf("Delete(one of two admins): %v", err)
		}
		if err := repo.Delete(ctx, b.ID); !errors.Is(err, domain.ErrLastAdmin) {
			t.Errorf("Delete(the last enabled admin) error = %v, want ErrLastAdmin", err)
		}
		checkStored(t, repo, b)
	})

	// A disabled admin does not count as one: it cannot stand in for the
	// last enabled admin, and may itself be demoted or deleted freely.
	t.Run("disabled_admins_do_not_count", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		a, b, c := newAdmin(at(0)), newAdmin(at(time.Second)), newAdmin(at(2*time.Second))
		b.Disabled, c.Disabled = true, true
		for _, u := range []domain.User{a, b, c} {
			mustCreate(t, repo, u)
		}
		if _, err := repo.Update(ctx, a.ID, demote); !errors.Is(err, domain.ErrLastAdmin) {
			t.Errorf("Update(demote a, b disabled) error = %v, want ErrLastAdmin", err)
		}
		if err := repo.Delete(ctx, a.ID); !errors.Is(err, domain.ErrLastAdmin) {
			t.Errorf("Delete(a, b disabled) error = %v, want ErrLastAdmin", err)
		}
		if _, err := repo.Update(ctx, c.ID, demote); err != nil {
			t.Errorf("Update(demote the disabled admin c): %v", err)
		}
		if _, err := repo.Update(ctx, b.ID, enable); err != nil {
			t.Fatalf("Update(enable b): %v", err)
		}
		if _, err := repo.Update(ctx, a.ID, disable); err != nil {
			t.Fatalf("Update(disable a, b enabled): %v", err)
		}
		if _, err := repo.Update(ctx, b.ID, disable); !errors.Is(err, domain.ErrLastAdmin) {
			t.Errorf("Update(disable b, a disabled) error = %v, want ErrLastAdmin", err)
		}
		if err := repo.Delete(ctx, a.ID); err != nil {
			t.Errorf("Delete(the disabled admin a): %v", err)
		}
		checkEnabledAdmins(t, repo, 1)
	})

	// With no enabled admin at all (a store made so), the rule refuses
	// nothing: no change can lose one.
	t.Run("no_enabled_admin", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		d := newAdmin(at(0))
		d.Disabled = true
		mustCreate(t, repo, d)
		if _, err := repo.Update(ctx, d.ID, demote); err != nil {
			t.Errorf("Update(demote the only, disabled, admin): %v", err)
		}
		if err := repo.Delete(ctx, d.ID); err != nil {
			t.Errorf("Delete(a former admin): %v", err)
		}
	})

	// Two enabled admins remove each other at once, by every pair of
	// ways, round after round (the survivor of one round faces a new
	// admin in the next): one succeeds, the other is refused.
	t.Run("concurrent_pairs", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		survivor := newAdmin(at(0))
		mustCreate(t, repo, survivor)
		ways := []string{"demote", "disable", "delete"}
		round := 0
		for _, w1 := range ways {
			for _, w2 := range ways {
				round++
				other := newAdmin(at(time.Duration(round) * time.Second))
				mustCreate(t, repo, other)
				pair := []domain.User{survivor, other}
				errs := make([]error, 2)
				var wg sync.WaitGroup
				for i, way := range []string{w1, w2} {
					wg.Go(func() { errs[i] = removeAdmin(ctx, repo, pair[i].ID, way) })
				}
				wg.Wait()
				ok := 0
				for i, err := range errs {
					switch {
					case err == nil:
						ok++
					case errors.Is(err, domain.ErrLastAdmin):
						survivor = pair[i]
					default:
						t.Fatalf("round %d (%s, %s): %v", round, w1, w2, err)
					}
				}
				if ok != 1 {
					t.Fatalf("round %d (%s, %s): %d of 2 succeeded (%v), want 1", round, w1, w2, ok, errs)
				}
				checkEnabledAdmins(t, repo, 1)
			}
		}
	})

	// Many admins all try to stop being one at once: all but one succeed.
	t.Run("concurrent_all", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		const n = 9
		admins := make([]domain.User, n)
		for i := range admins {
			admins[i] = newAdmin(at(time.Duration(i) * time.Second))
			mustCreate(t, repo, admins[i])
		}
		ways := []string{"demote", "disable", "delete"}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range admins {
			wg.Go(func() { errs[i] = removeAdmin(ctx, repo, admins[i].ID, ways[i%len(ways)]) })
		}
		wg.Wait()
		refused := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, domain.ErrLastAdmin):
				refused++
			case err != nil:
				t.Fatalf("remove admin: %v", err)
			}
		}
		if refused != 1 {
			t.Errorf("%d of %d removals refused, want 1: %v", refused, n, errs)
		}
		checkEnabledAdmins(t, repo, 1)
	})
}

// removeAdmin makes the admin id stop being an enabled admin in the way
// named.
func removeAdmin(ctx context.Context, repo ports.UserRepository, id domain.UserID, way string) error {
	switch way {
	case "demote":
		_, err := repo.Update(ctx, id, demote)
		return err
	case "disable":
		_, err := repo.Update(ctx, id, disable)
		return err
	case "delete":
		return repo.Delete(ctx, id)
	}
	return fmt.Errorf("no way %q", way)
}

// checkStored checks that the user stored under want's id is want.
func checkStored(t *testing.T, repo ports.UserRepository, want domain.User) {
	t.Helper()
	got, err := repo.ByID(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("ByID(%s): %v", want.ID, err)
	}
	checkUser(t, got, want)
}

// checkEnabledAdmins checks that the repository holds n enabled admins.
func checkEnabledAdmins(t *testing.T, repo ports.UserRepository, n int) {
	t.Helper()
	users, err := repo.List(t.Context(), ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10_000}})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := 0
	for _, u := range users {
		if u.IsEnabledAdmin() {
			got++
		}
	}
	if got != n {
		t.Fatalf("%d enabled admins stored, want %d", got, n)
	}
}
