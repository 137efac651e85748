package contract

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// refreshClients runs the cases of the sessions granted to the OpenID
// provider's clients: the client, scopes and auth_time a family keeps,
// Family, and RevokeClientSessions.
func refreshClients(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore)) {
	t.Run("client_scopes_and_auth_time", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		own, ownFirst := newFamily(u.ID, at(time.Minute))
		mustCreateFamily(t, store, own, ownFirst)
		granted, grantedFirst := clientFamily(u.ID, "client-a", at(2*time.Minute))
		granted.AuthTime = at(-time.Hour)
		mustCreateFamily(t, store, granted, grantedFirst)
		// A grant of no scope is kept as none, not as a session of userd's.
		bare, bareFirst := clientFamily(u.ID, "client-b", at(3*time.Minute))
		bare.Scopes = []domain.OAuthScope{}
		mustCreateFamily(t, store, bare, bareFirst)

		for _, c := range []struct {
			fam   domain.RefreshFamily
			first domain.RefreshToken
		}{{own, ownFirst}, {granted, grantedFirst}, {bare, bareFirst}} {
			_, got, err := store.Lookup(ctx, c.first.Hash)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			checkFamily(t, got, c.fam)
			got, err = store.Family(ctx, c.fam.ID)
			if err != nil {
				t.Fatalf("Family: %v", err)
			}
			checkFamily(t, got, c.fam)
		}
		if _, got, err := store.Lookup(ctx, ownFirst.Hash); err == nil && (got.ForClient() || !got.SignedInAt().Equal(own.CreatedAt)) {
			t.Errorf("userd's own session: ForClient %v, SignedInAt %s", got.ForClient(), got.SignedInAt())
		}
		sessions, err := store.Sessions(ctx, u.ID, at(time.Hour))
		if err != nil || len(sessions) != 3 {
			t.Fatalf("Sessions = %v, %v; want 3", sessions, err)
		}
		for _, f := range sessions {
			want := map[string]domain.RefreshFamily{own.ID: own, granted.ID: granted, bare.ID: bare}[f.ID]
			checkFamily(t, f, want)
		}
	})

	t.Run("family_whatever_its_state", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		revoked, revokedFirst := clientFamily(u.ID, "client-a", at(0))
		mustCreateFamily(t, store, revoked, revokedFirst)
		if err := store.RevokeFamily(ctx, revoked.ID, at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		revoked.RevokedAt = ptrTo(at(time.Hour))
		expired, expiredFirst := newFamily(u.ID, at(0))
		expired.ExpiresAt = at(time.Minute)
		mustCreateFamily(t, store, expired, expiredFirst)
		for _, want := range []domain.RefreshFamily{revoked, expired} {
			got, err := store.Family(ctx, want.ID)
			if err != nil {
				t.Fatalf("Family(%s): %v", want.ID, err)
			}
			checkFamily(t, got, want)
		}
		if _, err := store.Family(ctx, randomHex(16)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("Family(unknown) = %v; want ErrSessionNotFound", err)
		}
		if err := users.Delete(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Family(ctx, expired.ID); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("Family(of a deleted user) = %v; want ErrSessionNotFound", err)
		}
	})

	t.Run("touch", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		// A session of the pages: idle limit of 30 minutes.
		fam, first := newFamily(u.ID, at(time.Minute))
		fam.IdleTimeout = 30 * time.Minute
		mustCreateFamily(t, store, fam, first)
		lastUsed := func() time.Time {
			t.Helper()
			f, err := store.Family(ctx, fam.ID)
			if err != nil {
				t.Fatalf("Family: %v", err)
			}
			return f.LastUsedAt
		}
		// Within TouchInterval of the last use: nothing written.
		if err := store.Touch(ctx, fam.ID, at(time.Minute+30*time.Second)); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if got := lastUsed(); !sameTime(got, at(time.Minute)) {
			t.Errorf("a touch within a minute moved LastUsedAt to %s", got)
		}
		// Later, within the idle limit: moved, and the limit counts from it.
		if err := store.Touch(ctx, fam.ID, at(20*time.Minute)); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if got := lastUsed(); !sameTime(got, at(20*time.Minute)) {
			t.Errorf("LastUsedAt = %s, want the touch's time", got)
		}
		sessions, err := store.Sessions(ctx, u.ID, at(45*time.Minute))
		if err != nil || len(sessions) != 1 {
			t.Errorf("35 minutes after the sign-in, 25 after the touch: sessions %v, %v; want the session", sessions, err)
		}
		// Past the idle limit, a lapsed session is not revived.
		if err := store.Touch(ctx, fam.ID, at(51*time.Minute)); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		if got := lastUsed(); !sameTime(got, at(20*time.Minute)) {
			t.Errorf("a lapsed session was touched: LastUsedAt %s", got)
		}
		// Nor an ended one, nor an unknown one (no error).
		other, otherFirst := newFamily(u.ID, at(time.Minute))
		mustCreateFamily(t, store, other, otherFirst)
		if err := store.RevokeFamily(ctx, other.ID, at(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := store.Touch(ctx, other.ID, at(10*time.Minute)); err != nil {
			t.Fatalf("Touch of an ended session: %v", err)
		}
		if f, _ := store.Family(ctx, other.ID); !sameTime(f.LastUsedAt, at(time.Minute)) {
			t.Errorf("an ended session was touched")
		}
		if err := store.Touch(ctx, randomHex(16), at(10*time.Minute)); err != nil {
			t.Errorf("Touch of an unknown session: %v", err)
		}
	})

	t.Run("revoke_client_sessions", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u, other := twoUsers(t, users)
		const client, otherClient = domain.OAuthClientID("client-a"), domain.OAuthClientID("client-b")
		openA, _ := storedClientFamily(t, store, u.ID, client, at(0))
		openB, _ := storedClientFamily(t, store, u.ID, client, at(time.Minute))
		before, _ := storedClientFamily(t, store, u.ID, client, at(2*time.Minute))
		if err := store.RevokeFamily(ctx, before.ID, at(time.Hour)); err != nil {
			t.Fatal(err)
		}
		before.RevokedAt = ptrTo(at(time.Hour))
		elsewhere, _ := storedClientFamily(t, store, u.ID, otherClient, at(0))
		othersOwn, _ := storedClientFamily(t, store, other.ID, client, at(0))
		own, _ := storedFamily(t, store, u.ID, at(0))

		ended, err := store.RevokeClientSessions(ctx, u.ID, client, at(2*time.Hour))
		if err != nil {
			t.Fatalf("RevokeClientSessions: %v", err)
		}
		slices.Sort(ended)
		want := []string{openA.ID, openB.ID}
		slices.Sort(want)
		if !slices.Equal(ended, want) {
			t.Errorf("RevokeClientSessions = %v; want %v", ended, want)
		}
		openA.RevokedAt, openB.RevokedAt = ptrTo(at(2*time.Hour)), ptrTo(at(2*time.Hour))
		for _, f := range []domain.RefreshFamily{openA, openB, before, elsewhere, othersOwn, own} {
			got, err := store.Family(ctx, f.ID)
			if err != nil {
				t.Fatalf("Family: %v", err)
			}
			checkFamily(t, got, f)
		}
		if ended, err := store.RevokeClientSessions(ctx, u.ID, client, at(3*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf("RevokeClientSessions(again) = %v, %v; want none", ended, err)
		}
		if ended, err := store.RevokeClientSessions(ctx, domain.NewUserID(at(0)), client, at(3*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf("RevokeClientSessions(unknown user) = %v, %v; want none", ended, err)
		}
		// userd's own sessions are no client's.
		if ended, err := store.RevokeClientSessions(ctx, u.ID, "", at(3*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf(`RevokeClientSessions(client "") = %v, %v; want none`, ended, err)
		}
	})
}

// clientFamily is newFamily granted to client, with two scopes.
func clientFamily(user domain.UserID, client domain.OAuthClientID, created time.Time) (domain.RefreshFamily, domain.RefreshToken) {
	f, first := newFamily(user, created)
	f.ClientID = client
	f.Scopes = []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail}
	f.AMR = domain.AMRPasswordOTP
	return f, first
}

// storedClientFamily stores clientFamily.
func storedClientFamily(t *testing.T, store ports.RefreshTokenStore, user domain.UserID, client domain.OAuthClientID,
	created time.Time,
) (domain.RefreshFamily, domain.RefreshToken) {
	t.Helper()
	f, first := clientFamily(user, client, created)
	mustCreateFamily(t, store, f, first)
	return f, first
}
