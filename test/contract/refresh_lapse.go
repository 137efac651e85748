package contract

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// refreshLapse is the part of the RefreshTokenStore contract about
// families that lapse without a revocation: past their absolute end, or
// their idle limit (the web pages' sessions). A lapsed family is neither
// listed nor ended by RevokeSession, and no token of it rotates, on every
// store and every rotation path.
func refreshLapse(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore)) {
	// The idle limit is kept to the microsecond, as the times are.
	t.Run("idle_timeout_kept", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := newFamily(u.ID, at(0))
		fam.IdleTimeout = 45*time.Minute + 30*time.Second + 7*time.Microsecond
		mustCreateFamily(t, store, fam, first)
		_, got, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		checkFamily(t, got, fam)
		list, err := store.Sessions(ctx, u.ID, at(time.Minute))
		if err != nil || len(list) != 1 {
			t.Fatalf("Sessions = %v, %v; want one", list, err)
		}
		checkFamily(t, list[0], fam)
	})

	// With an idle limit, a family lapses that long after its last use
	// (its making, then each rotation): each rotation moves the limit.
	t.Run("idle_lapse", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := newFamily(u.ID, at(0))
		fam.IdleTimeout = 30 * time.Minute
		mustCreateFamily(t, store, fam, first)
		// Used 20 minutes in: idle until 50.
		second := successorOf(first, at(20*time.Minute))
		if ok, err := store.Rotate(ctx, first.Hash, at(20*time.Minute), second); err != nil || !ok {
			t.Fatalf("Rotate within the idle limit = %v, %v; want true, nil", ok, err)
		}
		wantListed(t, store, u.ID, at(50*time.Minute-time.Microsecond), fam.ID)
		wantListed(t, store, u.ID, at(50*time.Minute))
		if err := store.RevokeSession(ctx, u.ID, fam.ID, at(50*time.Minute)); !errors.Is(err, domain.ErrSessionNotFound) {
			t.Errorf("RevokeSession(idle past its limit) = %v, want ErrSessionNotFound", err)
		}
		wantLapsedRotation(t, store, second, at(50*time.Minute))
		wantLapsedRotation(t, store, second, at(3*time.Hour))
		// Nothing was written: at a time within the limit it rotates.
		third := successorOf(second, at(49*time.Minute))
		if ok, err := store.Rotate(ctx, second.Hash, at(49*time.Minute), third); err != nil || !ok {
			t.Fatalf("Rotate within the limit after refusals = %v, %v; want true, nil", ok, err)
		}
		wantListed(t, store, u.ID, at(79*time.Minute-time.Microsecond), fam.ID)
		wantListed(t, store, u.ID, at(79*time.Minute))
	})

	// Past its absolute end, a family rotates no more, with or without an
	// idle limit; a family without one is never idle.
	t.Run("absolute_lapse", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		for _, idle := range []time.Duration{0, 30 * time.Minute} {
			fam, first := newFamily(u.ID, at(0))
			fam.ExpiresAt, fam.IdleTimeout = at(8*time.Hour), idle
			mustCreateFamily(t, store, fam, first)
			wantLapsedRotation(t, store, first, at(8*time.Hour))
			if idle == 0 {
				// Unused for hours, yet live until its end.
				next := successorOf(first, at(8*time.Hour-time.Microsecond))
				if ok, err := store.Rotate(ctx, first.Hash, at(8*time.Hour-time.Microsecond), next); err != nil || !ok {
					t.Fatalf("Rotate just before the end = %v, %v; want true, nil", ok, err)
				}
				wantListed(t, store, u.ID, at(8*time.Hour-time.Microsecond), fam.ID)
			}
			wantListed(t, store, u.ID, at(8*time.Hour))
		}
	})

	// The refusals come in the port's order: a revoked family is revoked
	// (whether or not it lapsed too), and a lapsed family refuses a token
	// that was used already as it refuses any.
	t.Run("lapse_order", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := newFamily(u.ID, at(0))
		fam.IdleTimeout = 30 * time.Minute
		mustCreateFamily(t, store, fam, first)
		second := successorOf(first, at(time.Minute))
		if ok, err := store.Rotate(ctx, first.Hash, at(time.Minute), second); err != nil || !ok {
			t.Fatalf("Rotate = %v, %v", ok, err)
		}
		// first is used; the family is idle from 31 minutes.
		wantLapsedRotation(t, store, first, at(time.Hour))
		if err := store.RevokeFamily(ctx, fam.ID, at(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		next := successorOf(second, at(3*time.Hour))
		if ok, err := store.Rotate(ctx, second.Hash, at(3*time.Hour), next); ok || !errors.Is(err, domain.ErrRefreshFamilyRevoked) {
			t.Errorf("Rotate(revoked and lapsed) = %v, %v; want false, ErrRefreshFamilyRevoked", ok, err)
		}
	})
}

// wantListed checks that Sessions at now lists exactly the families ids,
// in that order.
func wantListed(t *testing.T, store ports.RefreshTokenStore, user domain.UserID, now time.Time, ids ...string) {
	t.Helper()
	list, err := store.Sessions(t.Context(), user, now)
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	got := make([]string, len(list))
	for i, f := range list {
		got[i] = f.ID
	}
	if !slices.Equal(got, ids) {
		t.Errorf("Sessions at %s = %v, want %v", now.Format(time.RFC3339Nano), got, ids)
	}
}

// wantLapsedRotation checks that tok does not rotate at usedAt, its
// family lapsed: false, domain.ErrRefreshFamilyLapsed, and nothing
// written (tok as it was, no successor).
func wantLapsedRotation(t *testing.T, store ports.RefreshTokenStore, tok domain.RefreshToken, usedAt time.Time) {
	t.Helper()
	ctx := t.Context()
	before, _, err := store.Lookup(ctx, tok.Hash)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	next := successorOf(tok, usedAt)
	if ok, err := store.Rotate(ctx, tok.Hash, usedAt, next); ok || !errors.Is(err, domain.ErrRefreshFamilyLapsed) {
		t.Errorf("Rotate(lapsed at %s) = %v, %v; want false, ErrRefreshFamilyLapsed", usedAt.Format(time.RFC3339Nano), ok, err)
	}
	after, _, err := store.Lookup(ctx, tok.Hash)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	checkToken(t, after, before)
	if _, _, err := store.Lookup(ctx, next.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
		t.Errorf("Lookup(refused successor) = %v, want ErrRefreshTokenInvalid", err)
	}
}
