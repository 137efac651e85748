package contract

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// refreshSessions is the part of the RefreshTokenStore contract about
// sessions: what a family records of its sign-in, listing a user's, and
// ending one.
func refreshSessions(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore)) {
	// A session shows its sign-in's User-Agent and IP, and when it was
	// last used: made, then each rotation.
	t.Run("session_record", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := newFamily(u.ID, at(time.Minute))
		fam.UserAgent = "Mozilla/5.0 (X11; Linux x86_64) ünïcode"
		fam.IP = "2001:db8::1"
		fam.LastUsedAt = at(time.Hour) // ignored: a new family was last used when made
		mustCreateFamily(t, store, fam, first)
		_, got, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if got.UserAgent != fam.UserAgent || got.IP != fam.IP || !sameTime(got.LastUsedAt, fam.CreatedAt) {
			t.Errorf("new family: userAgent %q ip %q lastUsed %s; want %q %q %s", got.UserAgent, got.IP,
				got.LastUsedAt, fam.UserAgent, fam.IP, fam.CreatedAt)
		}
		next := successorOf(first, at(2*time.Hour))
		if ok, err := store.Rotate(ctx, first.Hash, at(2*time.Hour), next); err != nil || !ok {
			t.Fatalf("Rotate = %v, %v", ok, err)
		}
		list, err := store.Sessions(ctx, u.ID, at(3*time.Hour))
		if err != nil || len(list) != 1 {
			t.Fatalf("Sessions = %v, %v; want one", list, err)
		}
		if !sameTime(list[0].LastUsedAt, at(2*time.Hour)) || list[0].UserAgent != fam.UserAgent || list[0].IP != fam.IP {
			t.Errorf("after rotation: lastUsed %s userAgent %q ip %q", list[0].LastUsedAt, list[0].UserAgent, list[0].IP)
		}
		checkFamily(t, list[0], fam)
	})

	// Sessions lists the user's active families, newest first; revoked
	// and expired ones, and other users', are not listed.
	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u, other := twoUsers(t, users)
		var want []string
		for i := range 5 {
			fam, _ := storedFamily(t, store, u.ID, at(time.Duration(i)*time.Minute))
			want = append([]string{fam.ID}, want...)
		}
		revoked, _ := storedFamily(t, store, u.ID, at(10*time.Minute))
		if err := store.RevokeFamily(ctx, revoked.ID, at(11*time.Minute)); err != nil {
			t.Fatal(err)
		}
		expired, expiredFirst := newFamily(u.ID, at(0))
		expired.ExpiresAt = at(30 * time.Minute)
		mustCreateFamily(t, store, expired, expiredFirst)
		storedFamily(t, store, other.ID, at(20*time.Minute))

		list, err := store.Sessions(ctx, u.ID, at(time.Hour))
		if err != nil {
			t.Fatalf("Sessions: %v", err)
		}
		var got []string
		for _, f := range list {
			got = append(got, f.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Sessions = %v, want %v", got, want)
		}
		if list, err := store.Sessions(ctx, domain.NewUserID(at(0)), at(time.Hour)); err != nil || len(list) != 0 {
			t.Errorf("Sessions(unknown user) = %v, %v; want none, nil", list, err)
		}
	})

	t.Run("revoke_session", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u, other := twoUsers(t, users)
		fam, first := newFamily(u.ID, at(0))
		keep, keepFirst := newFamily(u.ID, at(time.Minute))
		otherFam, otherFirst := newFamily(other.ID, at(0))
		mustCreateFamily(t, store, fam, first)
		mustCreateFamily(t, store, keep, keepFirst)
		mustCreateFamily(t, store, otherFam, otherFirst)

		if err := store.RevokeSession(ctx, u.ID, otherFam.ID, at(time.Hour)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("RevokeSession(another user's) = %v, want ErrSessionNotFound", err)
		}
		if err := store.RevokeSession(ctx, u.ID, randomHex(16), at(time.Hour)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("RevokeSession(unknown) = %v, want ErrSessionNotFound", err)
		}
		if err := store.RevokeSession(ctx, u.ID, fam.ID, at(time.Hour)); err != nil {
			t.Fatalf("RevokeSession: %v", err)
		}
		if err := store.RevokeSession(ctx, u.ID, fam.ID, at(2*time.Hour)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("RevokeSession(revoked) = %v, want ErrSessionNotFound", err)
		}
		_, got, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatal(err)
		}
		revokedAt := at(time.Hour)
		want := fam
		want.RevokedAt = &revokedAt
		checkFamily(t, got, want)
		if ok, err := store.Rotate(ctx, first.Hash, at(2*time.Hour), successorOf(first, at(2*time.Hour))); ok || !errors.Is(err, domain.ErrRefreshFamilyRevoked) {
			t.Errorf("Rotate(revoked session) = %v, %v; want false, ErrRefreshFamilyRevoked", ok, err)
		}
		for _, c := range []struct {
			hash string
			fam  domain.RefreshFamily
		}{{keepFirst.Hash, keep}, {otherFirst.Hash, otherFam}} {
			_, got, err := store.Lookup(ctx, c.hash)
			if err != nil {
				t.Fatal(err)
			}
			checkFamily(t, got, c.fam)
		}
		expired, expiredFirst := newFamily(u.ID, at(0))
		expired.ExpiresAt = at(time.Hour)
		mustCreateFamily(t, store, expired, expiredFirst)
		if err := store.RevokeSession(ctx, u.ID, expired.ID, at(time.Hour)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("RevokeSession(expired) = %v, want ErrSessionNotFound", err)
		}
	})
}

// storedFamily makes a family of user created at created (newFamily) and
// stores it with its first token.
func storedFamily(t *testing.T, store ports.RefreshTokenStore, user domain.UserID, created time.Time) (domain.RefreshFamily, domain.RefreshToken) {
	t.Helper()
	f, first := newFamily(user, created)
	mustCreateFamily(t, store, f, first)
	return f, first
}

// twoUsers stores two users, made a second apart: the one under test and
// another, whose sessions must not be touched.
func twoUsers(t *testing.T, users ports.UserRepository) (u, other domain.User) {
	t.Helper()
	u, other = newUser(at(0)), newUser(at(time.Second))
	mustCreate(t, users, u)
	mustCreate(t, users, other)
	return u, other
}
