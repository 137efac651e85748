package contract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// checkGrant checks that got is want as stored; scopes come back empty,
// never nil.
func checkGrant(t *testing.T, got, want domain.Grant) {
	t.Helper()
	if got.UserID != want.UserID || got.ClientID != want.ClientID || !slices.Equal(got.Scopes, want.Scopes) ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("grant mismatch:\n got %+v\nwant %+v", got, want)
	}
	if got.Scopes == nil {
		t.Errorf("grant of %s to %s has nil scopes", got.UserID, got.ClientID)
	}
}

func newGrant(user domain.UserID, client domain.OAuthClientID, created time.Time) domain.Grant {
	return domain.Grant{UserID: user, ClientID: client, Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeProfile},
		CreatedAt: created, UpdatedAt: created}
}

func mustPutGrant(t *testing.T, store ports.GrantStore, g domain.Grant) {
	t.Helper()
	if err := store.PutGrant(t.Context(), g); err != nil {
		t.Fatalf("PutGrant: %v", err)
	}
}

func grantNotFound(t *testing.T, store ports.GrantStore, user domain.UserID, client domain.OAuthClientID) {
	t.Helper()
	if got, err := store.Grant(t.Context(), user, client); !errors.Is(err, domain.ErrGrantNotFound) {
		t.Errorf("Grant(%s, %s) = %+v, %v; want ErrGrantNotFound", user, client, got, err)
	}
}

func grantClients(grants []domain.Grant) []domain.OAuthClientID {
	out := make([]domain.OAuthClientID, len(grants))
	for i, g := range grants {
		out[i] = g.ClientID
	}
	return out
}

// GrantStore runs the contract of ports.GrantStore.
func GrantStore(t *testing.T, newStorage func(t *testing.T) ProviderStorage) {
	t.Run("put_and_read", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		g := newGrant(u.ID, c.ID, at(0))
		mustPutGrant(t, s.Grants, g)
		got, err := s.Grants.Grant(t.Context(), u.ID, c.ID)
		if err != nil {
			t.Fatalf("Grant: %v", err)
		}
		checkGrant(t, got, g)
		// A second put replaces the scopes and keeps the creation time.
		again := g
		again.Scopes, again.CreatedAt, again.UpdatedAt = []domain.OAuthScope{}, at(time.Hour), at(time.Hour)
		mustPutGrant(t, s.Grants, again)
		again.CreatedAt = g.CreatedAt
		got, err = s.Grants.Grant(t.Context(), u.ID, c.ID)
		if err != nil {
			t.Fatalf("Grant: %v", err)
		}
		checkGrant(t, got, again)
		grantNotFound(t, s.Grants, u.ID, domain.NewOAuthClientID(at(0)))
		grantNotFound(t, s.Grants, domain.NewUserID(at(0)), c.ID)
	})

	t.Run("user_and_client_must_exist", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		noClient := newGrant(u.ID, domain.NewOAuthClientID(at(0)), at(0))
		if err := s.Grants.PutGrant(t.Context(), noClient); !errors.Is(err, domain.ErrOAuthClientNotFound) {
			t.Errorf("PutGrant(unknown client) = %v; want ErrOAuthClientNotFound", err)
		}
		noUser := newGrant(domain.NewUserID(at(0)), c.ID, at(0))
		if err := s.Grants.PutGrant(t.Context(), noUser); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("PutGrant(unknown user) = %v; want ErrUserNotFound", err)
		}
		grantNotFound(t, s.Grants, noUser.UserID, c.ID)
	})

	t.Run("grants_oldest_first", func(t *testing.T) {
		t.Parallel()
		s, u, _ := providerSetup(t, newStorage)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		var want []domain.Grant
		for _, d := range []time.Duration{2 * time.Hour, 0, time.Hour, time.Hour} {
			c := newOAuthClient(at(d))
			mustCreateClient(t, s.Clients, c)
			g := newGrant(u.ID, c.ID, at(d))
			mustPutGrant(t, s.Grants, g)
			want = append(want, g)
			mustPutGrant(t, s.Grants, newGrant(other.ID, c.ID, at(-d)))
		}
		slices.SortFunc(want, func(a, b domain.Grant) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ClientID, b.ClientID))
		})
		got, err := s.Grants.Grants(t.Context(), u.ID)
		if err != nil {
			t.Fatalf("Grants: %v", err)
		}
		if !slices.Equal(grantClients(got), grantClients(want)) {
			t.Fatalf("Grants = %v; want %v", grantClients(got), grantClients(want))
		}
		for i := range got {
			checkGrant(t, got[i], want[i])
		}
		if none, err := s.Grants.Grants(t.Context(), domain.NewUserID(at(0))); err != nil || len(none) != 0 {
			t.Errorf("Grants(unknown user) = %v, %v; want none", none, err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		mustPutGrant(t, s.Grants, newGrant(u.ID, c.ID, at(0)))
		if err := s.Grants.DeleteGrant(t.Context(), u.ID, c.ID); err != nil {
			t.Fatalf("DeleteGrant: %v", err)
		}
		grantNotFound(t, s.Grants, u.ID, c.ID)
		if err := s.Grants.DeleteGrant(t.Context(), u.ID, c.ID); !errors.Is(err, domain.ErrGrantNotFound) {
			t.Errorf("DeleteGrant(again) = %v; want ErrGrantNotFound", err)
		}
	})

	t.Run("deleted_with_their_user_or_client", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		other, otherClient := newUser(at(time.Second)), newOAuthClient(at(time.Second))
		mustCreate(t, s.Users, other)
		mustCreateClient(t, s.Clients, otherClient)
		for _, g := range []domain.Grant{newGrant(u.ID, c.ID, at(0)), newGrant(u.ID, otherClient.ID, at(0)),
			newGrant(other.ID, c.ID, at(0)), newGrant(other.ID, otherClient.ID, at(0))} {
			mustPutGrant(t, s.Grants, g)
		}
		if err := s.Users.Delete(t.Context(), u.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Clients.Delete(t.Context(), c.ID); err != nil {
			t.Fatal(err)
		}
		grantNotFound(t, s.Grants, u.ID, otherClient.ID)
		grantNotFound(t, s.Grants, other.ID, c.ID)
		if _, err := s.Grants.Grant(t.Context(), other.ID, otherClient.ID); err != nil {
			t.Errorf("Grant(the one kept) = %v", err)
		}
	})

	t.Run("transaction", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		err := withinTx(t, s.Tx, func(ctx context.Context) error {
			if err := s.Grants.PutGrant(ctx, newGrant(u.ID, c.ID, at(0))); err != nil {
				return err
			}
			// A failure the caller goes on after leaves the transaction usable.
			if err := s.Grants.PutGrant(ctx, newGrant(u.ID, domain.NewOAuthClientID(at(0)), at(0))); !errors.Is(err, domain.ErrOAuthClientNotFound) {
				return fmt.Errorf("PutGrant(unknown client) = %v", err)
			}
			if _, err := s.Grants.Grant(ctx, u.ID, c.ID); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v; want errRollback", err)
		}
		grantNotFound(t, s.Grants, u.ID, c.ID)
	})
}
