package contract

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// clientGifts is what a client was given in a storage: sessions of two
// users (one revoked already), grants, and authorization requests, one
// with a code.
type clientGifts struct {
	open     []domain.RefreshFamily
	revoked  domain.RefreshFamily
	grants   []domain.Grant
	pending  domain.AuthRequest
	codeHash string
}

// giveClient stores clientGifts of the client to u and other.
func giveClient(t *testing.T, s ProviderStorage, client domain.OAuthClientID, u, other domain.User) clientGifts {
	t.Helper()
	var g clientGifts
	for _, user := range []domain.UserID{u.ID, other.ID, u.ID} {
		f, _ := storedClientFamily(t, s.Tokens, user, client, at(0))
		g.open = append(g.open, f)
	}
	g.revoked, _ = storedClientFamily(t, s.Tokens, u.ID, client, at(0))
	if err := s.Tokens.RevokeFamily(t.Context(), g.revoked.ID, at(time.Minute)); err != nil {
		t.Fatal(err)
	}
	g.revoked.RevokedAt = ptrTo(at(time.Minute))
	for _, user := range []domain.UserID{u.ID, other.ID} {
		gr := newGrant(user, client, at(0))
		mustPutGrant(t, s.Grants, gr)
		g.grants = append(g.grants, gr)
	}
	g.pending = newAuthRequest(client, at(0))
	mustCreateAuthRequest(t, s.AuthRequests, g.pending)
	coded := newAuthRequest(client, at(0))
	mustCreateAuthRequest(t, s.AuthRequests, coded)
	signed, _ := signedIn(coded, u.ID, at(time.Minute))
	mustAttachCode(t, s.AuthRequests, coded.ID, signed, at(time.Minute))
	g.codeHash = signed.CodeHash
	return g
}

// checkGiven checks that g is still given, its open sessions ended at
// endedAt unless nil.
func checkGiven(t *testing.T, s ProviderStorage, g clientGifts, endedAt *time.Time) {
	t.Helper()
	ctx := t.Context()
	for _, f := range append(slices.Clone(g.open), g.revoked) {
		want := f
		if want.RevokedAt == nil {
			want.RevokedAt = endedAt
		}
		got, err := s.Tokens.Family(ctx, f.ID)
		if err != nil {
			t.Fatalf("Family: %v", err)
		}
		checkFamily(t, got, want)
	}
	for _, gr := range g.grants {
		if _, err := s.Grants.Grant(ctx, gr.UserID, gr.ClientID); err != nil {
			t.Errorf("Grant(%s, %s) = %v", gr.UserID, gr.ClientID, err)
		}
	}
	if _, err := s.AuthRequests.AuthRequest(ctx, g.pending.ID, at(time.Minute)); err != nil {
		t.Errorf("AuthRequest(pending) = %v", err)
	}
}

// checkTaken checks that g is no longer given: no grant, no request, the
// sessions ended at endedAt (the one ended before keeps its time).
func checkTaken(t *testing.T, s ProviderStorage, g clientGifts, endedAt time.Time) {
	t.Helper()
	for _, f := range g.open {
		got, err := s.Tokens.Family(t.Context(), f.ID)
		if err != nil || !sameTimePtr(got.RevokedAt, &endedAt) {
			t.Errorf("Family(%s) revoked at %s, %v; want %s", f.ID, fmtTimePtr(got.RevokedAt), err, endedAt.Format(time.RFC3339Nano))
		}
	}
	got, err := s.Tokens.Family(t.Context(), g.revoked.ID)
	if err != nil {
		t.Fatalf("Family: %v", err)
	}
	checkFamily(t, got, g.revoked)
	for _, gr := range g.grants {
		grantNotFound(t, s.Grants, gr.UserID, gr.ClientID)
	}
	requestNotFound(t, s.AuthRequests, g.pending.ID, at(time.Minute))
	codeInvalid(t, s.AuthRequests, g.codeHash, at(time.Minute))
}

func compareEnded(a, b ports.EndedSession) int { return cmp.Compare(a.ID, b.ID) }

// OAuthClientRevoker runs the contract of ports.OAuthClientRevoker.
func OAuthClientRevoker(t *testing.T, newStorage func(t *testing.T) ProviderStorage) {
	t.Run("revoke_client", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		other, otherClient := newUser(at(time.Second)), newOAuthClient(at(time.Second))
		mustCreate(t, s.Users, other)
		mustCreateClient(t, s.Clients, otherClient)
		given := giveClient(t, s, c.ID, u, other)
		kept := giveClient(t, s, otherClient.ID, u, other)
		own, _ := storedFamily(t, s.Tokens, u.ID, at(0))

		ended, err := s.Revoker.RevokeClient(t.Context(), c.ID, at(time.Hour))
		if err != nil {
			t.Fatalf("RevokeClient: %v", err)
		}
		var want []ports.EndedSession
		for _, f := range given.open {
			want = append(want, ports.EndedSession{UserID: f.UserID, ID: f.ID})
		}
		slices.SortFunc(ended, compareEnded)
		slices.SortFunc(want, compareEnded)
		if !slices.Equal(ended, want) {
			t.Errorf("RevokeClient = %v; want %v", ended, want)
		}
		checkTaken(t, s, given, at(time.Hour))
		checkGiven(t, s, kept, nil)
		if got, err := s.Tokens.Family(t.Context(), own.ID); err != nil || got.RevokedAt != nil {
			t.Errorf("userd's own session after RevokeClient = %+v, %v; want it open", got, err)
		}
		if ended, err := s.Revoker.RevokeClient(t.Context(), c.ID, at(2*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf("RevokeClient(again) = %v, %v; want none", ended, err)
		}
		if ended, err := s.Revoker.RevokeClient(t.Context(), domain.NewOAuthClientID(at(0)), at(2*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf("RevokeClient(unknown) = %v, %v; want none", ended, err)
		}
	})

	// As the clients' use cases call it: in the transaction of the
	// client's deletion, undone with it.
	t.Run("within_the_deletions_transaction", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		given := giveClient(t, s, c.ID, u, other)
		err := withinTx(t, s.Tx, func(ctx context.Context) error {
			ended, err := s.Revoker.RevokeClient(ctx, c.ID, at(time.Hour))
			if err != nil {
				return err
			}
			if len(ended) != len(given.open) {
				t.Errorf("RevokeClient ended %d sessions; want %d", len(ended), len(given.open))
			}
			if err := s.Clients.Delete(ctx, c.ID); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v; want errRollback", err)
		}
		checkGiven(t, s, given, nil)
		if err := withinTx(t, s.Tx, func(ctx context.Context) error {
			if _, err := s.Revoker.RevokeClient(ctx, c.ID, at(time.Hour)); err != nil {
				return err
			}
			return s.Clients.Delete(ctx, c.ID)
		}); err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		checkTaken(t, s, given, at(time.Hour))
		clientNotFound(t, s.Clients, c.ID)
	})
}
