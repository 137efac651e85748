package contract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// OAuthClientStorage is a client store over one empty storage, and the
// Transactor of that storage.
type OAuthClientStorage struct {
	Tx      ports.Transactor
	Clients ports.OAuthClientStore
}

// newOAuthClient returns a confidential client made at created, whose
// lists hold what a careless encoding would break: commas, quotes,
// backslashes and percent signs in the URIs, a name beyond ASCII.
func newOAuthClient(created time.Time) domain.OAuthClient {
	id := domain.NewOAuthClientID(created)
	return domain.OAuthClient{
		ID:   id,
		Name: "Grafana — " + string(id[len(id)-6:]) + ` "ops"`,
		Type: domain.OAuthClientConfidential,
		RedirectURIs: []string{"https://grafana.example.com/login/generic_oauth?tenant=a,b",
			`https://grafana.example.com/cb?q="x"\y%2C`, "http://127.0.0.1/cb"},
		PostLogoutRedirectURIs: []string{},
		GrantTypes:             []domain.OAuthGrantType{domain.GrantAuthorizationCode, domain.GrantRefreshToken},
		Scopes:                 []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail},
		IDTokenSigningAlg:      domain.IDTokenRS256,
		SecretHash:             randomHex(32),
		CreatedAt:              created,
		UpdatedAt:              created,
	}
}

// checkOAuthClient checks that got is want as stored. Lists come back
// empty, never nil, when they are.
func checkOAuthClient(t *testing.T, got, want domain.OAuthClient) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Type != want.Type ||
		!slices.Equal(got.RedirectURIs, want.RedirectURIs) || !slices.Equal(got.PostLogoutRedirectURIs, want.PostLogoutRedirectURIs) ||
		!slices.Equal(got.GrantTypes, want.GrantTypes) || !slices.Equal(got.Scopes, want.Scopes) ||
		got.FirstParty != want.FirstParty || got.IDTokenSigningAlg != want.IDTokenSigningAlg || got.SecretHash != want.SecretHash ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("client mismatch:\n got %+v\nwant %+v", got, want)
	}
	if got.RedirectURIs == nil || got.PostLogoutRedirectURIs == nil || got.GrantTypes == nil || got.Scopes == nil {
		t.Errorf("client %s has a nil list: %+v", got.ID, got)
	}
}

func mustCreateClient(t *testing.T, store ports.OAuthClientStore, c domain.OAuthClient) {
	t.Helper()
	if err := store.Create(t.Context(), c); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

// clientNotFound checks that no client has the id.
func clientNotFound(t *testing.T, store ports.OAuthClientStore, id domain.OAuthClientID) {
	t.Helper()
	if got, err := store.ByID(t.Context(), id); !errors.Is(err, domain.ErrOAuthClientNotFound) {
		t.Errorf("ByID(%s) = %+v, %v; want ErrOAuthClientNotFound", id, got, err)
	}
}

func clientIDs(clients []domain.OAuthClient) []domain.OAuthClientID {
	out := make([]domain.OAuthClientID, len(clients))
	for i, c := range clients {
		out[i] = c.ID
	}
	return out
}

// OAuthClientStore runs the contract of ports.OAuthClientStore.
func OAuthClientStore(t *testing.T, newStorage func(t *testing.T) OAuthClientStorage) {
	t.Run("create_and_read", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c := newOAuthClient(at(0))
		c.FirstParty, c.IDTokenSigningAlg = true, domain.IDTokenEdDSA
		c.PostLogoutRedirectURIs = []string{"com.example.app:/bye"}
		pub := newOAuthClient(at(time.Second))
		pub.Type, pub.SecretHash, pub.RedirectURIs = domain.OAuthClientPublic, "", []string{}
		pub.GrantTypes, pub.Scopes = []domain.OAuthGrantType{domain.GrantClientCredentials}, domain.OAuthScopes
		mustCreateClient(t, store, c)
		mustCreateClient(t, store, pub)
		for _, want := range []domain.OAuthClient{c, pub} {
			got, err := store.ByID(t.Context(), want.ID)
			if err != nil {
				t.Fatalf("ByID: %v", err)
			}
			checkOAuthClient(t, got, want)
		}
		clientNotFound(t, store, domain.NewOAuthClientID(at(0)))
	})

	t.Run("create_twice", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c := newOAuthClient(at(0))
		mustCreateClient(t, store, c)
		again := c
		again.Name, again.SecretHash = "Impostor", randomHex(32)
		if err := store.Create(t.Context(), again); err == nil {
			t.Fatal("a second client with the same id was stored")
		}
		got, err := store.ByID(t.Context(), c.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkOAuthClient(t, got, c)
	})

	t.Run("list", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		empty, err := store.List(t.Context(), domain.Page[domain.OAuthClientID]{Limit: 10})
		if err != nil || empty == nil || len(empty) != 0 {
			t.Fatalf("List of none = %v, %v; want an empty list", empty, err)
		}
		var all []domain.OAuthClient
		for _, d := range []time.Duration{3 * time.Hour, 0, time.Hour, 2 * time.Hour, time.Hour} {
			c := newOAuthClient(at(d))
			mustCreateClient(t, store, c)
			all = append(all, c)
		}
		slices.SortFunc(all, func(a, b domain.OAuthClient) int { return cmp.Compare(a.ID, b.ID) })
		want := clientIDs(all)
		for _, tc := range []struct {
			page domain.Page[domain.OAuthClientID]
			want []domain.OAuthClientID
		}{
			{domain.Page[domain.OAuthClientID]{Limit: 10}, want},
			{domain.Page[domain.OAuthClientID]{Limit: 2}, want[:2]},
			{domain.Page[domain.OAuthClientID]{Limit: 2, After: want[1]}, want[2:4]},
			{domain.Page[domain.OAuthClientID]{Limit: 2, After: want[4]}, []domain.OAuthClientID{}},
			// A cursor need not be a stored id.
			{domain.Page[domain.OAuthClientID]{Limit: 10, After: domain.OAuthClientID("000000000000000000000000")}, want},
		} {
			got, err := store.List(t.Context(), tc.page)
			if err != nil {
				t.Fatalf("List(%+v): %v", tc.page, err)
			}
			if !slices.Equal(clientIDs(got), tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.page, clientIDs(got), tc.want)
			}
		}
		got, err := store.List(t.Context(), domain.Page[domain.OAuthClientID]{Limit: 1})
		if err != nil || len(got) != 1 {
			t.Fatalf("List: %v, %v", got, err)
		}
		checkOAuthClient(t, got[0], all[0])
	})

	t.Run("update", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c, other := newOAuthClient(at(0)), newOAuthClient(at(time.Second))
		mustCreateClient(t, store, c)
		mustCreateClient(t, store, other)
		want := c
		want.Name, want.FirstParty, want.SecretHash, want.UpdatedAt = "Renamed, again", true, randomHex(32), at(time.Hour)
		want.RedirectURIs = []string{"https://new.example.com/cb"}
		want.PostLogoutRedirectURIs = []string{"https://new.example.com/bye", "http://[::1]:8080/bye"}
		want.GrantTypes, want.Scopes = []domain.OAuthGrantType{domain.GrantClientCredentials}, []domain.OAuthScope{domain.ScopeProfiles}
		want.IDTokenSigningAlg = domain.IDTokenEdDSA
		got, err := store.Update(t.Context(), c.ID, func(v *domain.OAuthClient) error {
			checkOAuthClient(t, *v, c)
			*v = want
			// The id and the creation time are kept whatever fn does.
			v.ID, v.CreatedAt = other.ID, at(-time.Hour)
			return nil
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		checkOAuthClient(t, got, want)
		stored, err := store.ByID(t.Context(), c.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkOAuthClient(t, stored, want)
		if stored, err := store.ByID(t.Context(), other.ID); err != nil {
			t.Fatalf("ByID(other): %v", err)
		} else {
			checkOAuthClient(t, stored, other)
		}
	})

	t.Run("update_refused", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c := newOAuthClient(at(0))
		mustCreateClient(t, store, c)
		errNo := errors.New("no")
		_, err := store.Update(t.Context(), c.ID, func(v *domain.OAuthClient) error {
			v.Name, v.SecretHash = "Changed", ""
			return errNo
		})
		if err != errNo { //nolint:errorlint // fn's error comes back unchanged, not wrapped
			t.Errorf("Update with a failing fn = %v, want its error unchanged", err)
		}
		stored, err := store.ByID(t.Context(), c.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkOAuthClient(t, stored, c)
		missing := domain.NewOAuthClientID(at(0))
		_, err = store.Update(t.Context(), missing, func(*domain.OAuthClient) error { return nil })
		if !errors.Is(err, domain.ErrOAuthClientNotFound) {
			t.Errorf("Update of a missing client = %v, want ErrOAuthClientNotFound", err)
		}
		clientNotFound(t, store, missing)
	})

	t.Run("update_concurrent", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c := newOAuthClient(at(0))
		c.RedirectURIs = []string{}
		mustCreateClient(t, store, c)
		const workers = 12
		updateConcurrently(t, workers, "Update", func(i int) error {
			_, err := store.Update(t.Context(), c.ID, func(v *domain.OAuthClient) error {
				v.RedirectURIs = append(v.RedirectURIs, "https://app.example.com/"+strconv.Itoa(i))
				return nil
			})
			return err
		})
		got, err := store.ByID(t.Context(), c.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		for i := range workers {
			if !slices.Contains(got.RedirectURIs, "https://app.example.com/"+strconv.Itoa(i)) {
				t.Errorf("update %d was lost: %v", i, got.RedirectURIs)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		store := newStorage(t).Clients
		c, keep := newOAuthClient(at(0)), newOAuthClient(at(time.Second))
		mustCreateClient(t, store, c)
		mustCreateClient(t, store, keep)
		if err := store.Delete(t.Context(), c.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		clientNotFound(t, store, c.ID)
		if err := store.Delete(t.Context(), c.ID); !errors.Is(err, domain.ErrOAuthClientNotFound) {
			t.Errorf("Delete again = %v, want ErrOAuthClientNotFound", err)
		}
		if got, err := store.List(t.Context(), domain.Page[domain.OAuthClientID]{Limit: 10}); err != nil ||
			!slices.Equal(clientIDs(got), []domain.OAuthClientID{keep.ID}) {
			t.Errorf("List after Delete = %v, %v; want the other client", clientIDs(got), err)
		}
	})

	t.Run("transaction", func(t *testing.T) {
		t.Parallel()
		s := newStorage(t)
		kept, doomed := newOAuthClient(at(0)), newOAuthClient(at(time.Second))
		mustCreateClient(t, s.Clients, kept)
		// A transaction that fails undoes its writes: a create, an update
		// and a delete.
		err := withinTx(t, s.Tx, func(ctx context.Context) error {
			if err := s.Clients.Create(ctx, doomed); err != nil {
				return err
			}
			if _, err := s.Clients.Update(ctx, kept.ID, func(v *domain.OAuthClient) error {
				v.Name = "Changed in a failed transaction"
				return nil
			}); err != nil {
				return err
			}
			if err := s.Clients.Delete(ctx, kept.ID); err != nil {
				return err
			}
			// A failure the caller goes on after leaves the transaction usable.
			if err := s.Clients.Delete(ctx, kept.ID); !errors.Is(err, domain.ErrOAuthClientNotFound) {
				return fmt.Errorf("second delete: %w", err)
			}
			if _, err := s.Clients.ByID(ctx, doomed.ID); err != nil {
				return fmt.Errorf("the transaction does not see its own write: %w", err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v, want errRollback", err)
		}
		clientNotFound(t, s.Clients, doomed.ID)
		got, err := s.Clients.ByID(t.Context(), kept.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		checkOAuthClient(t, got, kept)
		// One that succeeds keeps them.
		if err := withinTx(t, s.Tx, func(ctx context.Context) error {
			if err := s.Clients.Delete(ctx, kept.ID); err != nil {
				return err
			}
			return s.Clients.Create(ctx, doomed)
		}); err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		clientNotFound(t, s.Clients, kept.ID)
		if _, err := s.Clients.ByID(t.Context(), doomed.ID); err != nil {
			t.Errorf("ByID after a committed transaction: %v", err)
		}
	})
}

// withinTx runs tx.WithinTx, failing the test if it does not return in
// time (see within).
func withinTx(t *testing.T, tx ports.Transactor, fn func(ctx context.Context) error) error {
	t.Helper()
	return within(t, TxStores{Tx: tx}, fn)
}
