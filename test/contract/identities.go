package contract

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newUserIdentity returns a link of the user to a subject of the
// provider, unique to it, made at linked.
func newUserIdentity(user domain.UserID, provider string, linked time.Time) domain.UserIdentity {
	return domain.UserIdentity{
		UserID:     user,
		Provider:   provider,
		Subject:    "sub|" + randomHex(8),
		Email:      domain.Email("person-" + randomHex(4) + "@example.com"),
		LinkedAt:   linked,
		LastUsedAt: linked,
	}
}

func checkIdentity(t *testing.T, got, want domain.UserIdentity) {
	t.Helper()
	if got.UserID != want.UserID || got.Provider != want.Provider || got.Subject != want.Subject || got.Email != want.Email ||
		!sameTime(got.LinkedAt, want.LinkedAt) || !sameTime(got.LastUsedAt, want.LastUsedAt) {
		t.Errorf("identity mismatch:\n got %+v\nwant %+v", got, want)
	}
}

func mustLink(t *testing.T, store ports.UserIdentityStore, id domain.UserIdentity) {
	t.Helper()
	if err := store.LinkIdentity(t.Context(), id); err != nil {
		t.Fatalf("LinkIdentity(%s, %s): %v", id.Provider, id.Subject, err)
	}
}

// identityNotFound checks that no account has the identity.
func identityNotFound(t *testing.T, store ports.UserIdentityStore, provider, subject string) {
	t.Helper()
	if got, err := store.IdentityBySubject(t.Context(), provider, subject); !errors.Is(err, domain.ErrIdentityNotFound) {
		t.Errorf("IdentityBySubject(%s, %s) = %+v, %v; want ErrIdentityNotFound", provider, subject, got, err)
	}
}

// checkIdentities checks that the user's links are want, in order.
func checkIdentities(t *testing.T, store ports.UserIdentityStore, user domain.UserID, want ...domain.UserIdentity) {
	t.Helper()
	got, err := store.Identities(t.Context(), user)
	if err != nil {
		t.Fatalf("Identities(%s): %v", user, err)
	}
	if got == nil || len(got) != len(want) {
		t.Fatalf("Identities(%s) = %+v, want %d links (empty, not nil, for none)", user, got, len(want))
	}
	for i := range want {
		checkIdentity(t, got[i], want[i])
	}
}

// UserIdentityStore runs the contract of ports.UserIdentityStore over the
// storages that newStorage makes.
func UserIdentityStore(t *testing.T, newStorage func(t *testing.T) IdentityStorage) {
	// setup returns a storage with a user and two providers.
	setup := func(t *testing.T) (IdentityStorage, domain.User, domain.IdentityProvider, domain.IdentityProvider) {
		s := newStorage(t)
		providers := s.Open(newBox(t, secretbox.NewKey()))
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		p, q := newIdentityProvider(at(0)), newGitHubProvider(at(0))
		mustCreateProvider(t, providers, p)
		mustCreateProvider(t, providers, q)
		return s, u, p, q
	}

	t.Run("link_and_find", func(t *testing.T) {
		t.Parallel()
		s, u, p, _ := setup(t)
		id := newUserIdentity(u.ID, p.Slug, at(time.Second))
		id.LastUsedAt = at(time.Minute)
		mustLink(t, s.Identities, id)
		got, err := s.Identities.IdentityBySubject(t.Context(), p.Slug, id.Subject)
		if err != nil {
			t.Fatalf("IdentityBySubject: %v", err)
		}
		checkIdentity(t, got, id)
		identityNotFound(t, s.Identities, p.Slug, "other-subject")
		identityNotFound(t, s.Identities, "nobody", id.Subject)
		checkIdentities(t, s.Identities, "unknown-user")
	})

	t.Run("taken_both_ways", func(t *testing.T) {
		t.Parallel()
		s, u, p, _ := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		id := newUserIdentity(u.ID, p.Slug, at(0))
		mustLink(t, s.Identities, id)
		// The identity is another account's already.
		same := newUserIdentity(other.ID, p.Slug, at(time.Minute))
		same.Subject = id.Subject
		if err := s.Identities.LinkIdentity(t.Context(), same); !errors.Is(err, domain.ErrIdentityTaken) {
			t.Errorf("LinkIdentity(linked subject) = %v, want ErrIdentityTaken", err)
		}
		// The account has an identity of the provider already.
		second := newUserIdentity(u.ID, p.Slug, at(time.Minute))
		if err := s.Identities.LinkIdentity(t.Context(), second); !errors.Is(err, domain.ErrIdentityTaken) {
			t.Errorf("LinkIdentity(second identity of the provider) = %v, want ErrIdentityTaken", err)
		}
		// Nothing was written.
		identityNotFound(t, s.Identities, p.Slug, second.Subject)
		checkIdentities(t, s.Identities, other.ID)
		checkIdentities(t, s.Identities, u.ID, id)
	})

	// Two first sign-ins of one person at once, on two nodes: one link
	// wins, every other is ErrIdentityTaken, never a second link.
	t.Run("concurrent_links_of_one_subject", func(t *testing.T) {
		t.Parallel()
		s, _, p, _ := setup(t)
		const workers = 8
		users := make([]domain.User, workers)
		for i := range users {
			users[i] = newUser(at(time.Duration(i+1) * time.Second))
			mustCreate(t, s.Users, users[i])
		}
		subject := "sub|" + randomHex(8)
		var won atomic.Int32
		updateConcurrently(t, workers, "LinkIdentity", func(i int) error {
			id := newUserIdentity(users[i].ID, p.Slug, at(time.Minute))
			id.Subject = subject
			err := s.Identities.LinkIdentity(t.Context(), id)
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, domain.ErrIdentityTaken):
			default:
				return err
			}
			return nil
		})
		if n := won.Load(); n != 1 {
			t.Fatalf("%d links won, want exactly 1", n)
		}
		got, err := s.Identities.IdentityBySubject(t.Context(), p.Slug, subject)
		if err != nil {
			t.Fatalf("IdentityBySubject: %v", err)
		}
		for _, u := range users {
			if u.ID != got.UserID {
				checkIdentities(t, s.Identities, u.ID)
			}
		}
	})

	t.Run("identities_oldest_first", func(t *testing.T) {
		t.Parallel()
		s, u, p, q := setup(t)
		providers := s.Open(newBox(t, secretbox.NewKey()))
		r := newIdentityProvider(at(0))
		mustCreateProvider(t, providers, r)
		a := newUserIdentity(u.ID, p.Slug, at(2*time.Second))
		b := newUserIdentity(u.ID, q.Slug, at(time.Second))
		c := newUserIdentity(u.ID, r.Slug, at(3*time.Second))
		for _, id := range []domain.UserIdentity{a, b, c} {
			mustLink(t, s.Identities, id)
		}
		checkIdentities(t, s.Identities, u.ID, b, a, c)
	})

	t.Run("unlink", func(t *testing.T) {
		t.Parallel()
		s, u, p, q := setup(t)
		a, b := newUserIdentity(u.ID, p.Slug, at(0)), newUserIdentity(u.ID, q.Slug, at(time.Second))
		mustLink(t, s.Identities, a)
		mustLink(t, s.Identities, b)
		if err := s.Identities.UnlinkIdentity(t.Context(), u.ID, p.Slug); err != nil {
			t.Fatalf("UnlinkIdentity: %v", err)
		}
		identityNotFound(t, s.Identities, p.Slug, a.Subject)
		checkIdentities(t, s.Identities, u.ID, b)
		if err := s.Identities.UnlinkIdentity(t.Context(), u.ID, p.Slug); !errors.Is(err, domain.ErrIdentityNotFound) {
			t.Errorf("UnlinkIdentity(twice) = %v, want ErrIdentityNotFound", err)
		}
		if err := s.Identities.UnlinkIdentity(t.Context(), "unknown-user", q.Slug); !errors.Is(err, domain.ErrIdentityNotFound) {
			t.Errorf("UnlinkIdentity(unknown user) = %v, want ErrIdentityNotFound", err)
		}
		// Unlinked, the subject may be linked again.
		mustLink(t, s.Identities, a)
	})

	t.Run("touch", func(t *testing.T) {
		t.Parallel()
		s, u, p, _ := setup(t)
		id := newUserIdentity(u.ID, p.Slug, at(0))
		mustLink(t, s.Identities, id)
		if err := s.Identities.TouchIdentity(t.Context(), p.Slug, id.Subject, "new@example.com", at(time.Hour)); err != nil {
			t.Fatalf("TouchIdentity: %v", err)
		}
		id.Email, id.LastUsedAt = "new@example.com", at(time.Hour)
		got, err := s.Identities.IdentityBySubject(t.Context(), p.Slug, id.Subject)
		if err != nil {
			t.Fatalf("IdentityBySubject: %v", err)
		}
		checkIdentity(t, got, id)
		if err := s.Identities.TouchIdentity(t.Context(), p.Slug, "unknown", "x@example.com", at(time.Hour)); err != nil {
			t.Errorf("TouchIdentity(unknown) = %v, want nil", err)
		}
		identityNotFound(t, s.Identities, p.Slug, "unknown")
	})

	t.Run("user_deletion_cascades", func(t *testing.T) {
		t.Parallel()
		s, u, p, q := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		a, b := newUserIdentity(u.ID, p.Slug, at(0)), newUserIdentity(u.ID, q.Slug, at(time.Second))
		kept := newUserIdentity(other.ID, p.Slug, at(0))
		for _, id := range []domain.UserIdentity{a, b, kept} {
			mustLink(t, s.Identities, id)
		}
		if err := s.Users.Delete(t.Context(), u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		identityNotFound(t, s.Identities, p.Slug, a.Subject)
		identityNotFound(t, s.Identities, q.Slug, b.Subject)
		checkIdentities(t, s.Identities, u.ID)
		checkIdentities(t, s.Identities, other.ID, kept)
		// The deleted user's subject may be linked to another account.
		a.UserID = other.ID
		a.Provider = q.Slug
		mustLink(t, s.Identities, a)
	})
}
