package contract

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// refreshOwn runs the cases of RotateOwn: the lookup and rotation in one
// step of a token of a session of the app's own.
func refreshOwn(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore)) {
	// It returns what Lookup read before the rotation, and rotates as
	// Rotate does, into the token's family and user whatever successor
	// says, with the successor's end cut to the family's.
	t.Run("rotate_own", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := storedFamily(t, store, u.ID, at(0))

		usedAt := at(time.Hour + 3*time.Microsecond)
		// Asked to outlive the family by ten days.
		next := domain.RefreshToken{Hash: randomHex(32), IssuedAt: usedAt, ExpiresAt: fam.ExpiresAt.Add(10 * 24 * time.Hour)}
		tok, f, ok, err := store.RotateOwn(ctx, first.Hash, usedAt, next)
		if err != nil || !ok {
			t.Fatalf("RotateOwn = %v, %v; want true, nil", ok, err)
		}
		checkToken(t, tok, first)
		checkFamily(t, f, fam)
		if !sameTime(f.LastUsedAt, fam.CreatedAt) {
			t.Errorf("returned family's LastUsedAt = %s, want its value before the rotation %s", f.LastUsedAt, fam.CreatedAt)
		}
		wantUsed := first
		wantUsed.UsedAt, wantUsed.SuccessorHash = &usedAt, next.Hash
		wantRead(t, store, first.Hash, wantUsed, fam)
		wantNext := next
		wantNext.FamilyID, wantNext.UserID, wantNext.ExpiresAt = fam.ID, u.ID, fam.ExpiresAt
		wantRead(t, store, next.Hash, wantNext, fam)
		if got, err := store.Family(ctx, fam.ID); err != nil || !sameTime(got.LastUsedAt, usedAt) {
			t.Errorf("Family after RotateOwn = LastUsedAt %s, %v; want %s", got.LastUsedAt, err, usedAt)
		}

		// The successor rotates in turn, up to the family's end.
		lateAt := fam.ExpiresAt.Add(-time.Hour)
		last := domain.RefreshToken{Hash: randomHex(32), IssuedAt: lateAt, ExpiresAt: lateAt.Add(30 * 24 * time.Hour)}
		if _, _, ok, err := store.RotateOwn(ctx, next.Hash, lateAt, last); err != nil || !ok {
			t.Fatalf("RotateOwn(successor) = %v, %v; want true, nil", ok, err)
		}
		wantLast := last
		wantLast.FamilyID, wantLast.UserID, wantLast.ExpiresAt = fam.ID, u.ID, fam.ExpiresAt
		wantRead(t, store, last.Hash, wantLast, fam)

		if _, _, ok, err := store.RotateOwn(ctx, randomHex(32), usedAt, next); ok || !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("RotateOwn(unknown) = %v, %v; want false, ErrRefreshTokenInvalid", ok, err)
		}
	})

	// Whatever RotatableOwn refuses is returned as read, and nothing is
	// written.
	t.Run("rotate_own_refused", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)

		used, usedFirst := storedFamily(t, store, u.ID, at(0))
		usedNext := successorOf(usedFirst, at(time.Minute))
		if ok, err := store.Rotate(ctx, usedFirst.Hash, at(time.Minute), usedNext); err != nil || !ok {
			t.Fatalf("Rotate = %v, %v", ok, err)
		}
		usedFirst.UsedAt, usedFirst.SuccessorHash = new(at(time.Minute)), usedNext.Hash

		expired, expiredFirst := storedFamily(t, store, u.ID, at(0))
		revoked, revokedFirst := storedFamily(t, store, u.ID, at(0))
		if err := store.RevokeFamily(ctx, revoked.ID, at(time.Minute)); err != nil {
			t.Fatalf("RevokeFamily: %v", err)
		}
		revoked.RevokedAt = new(at(time.Minute))
		idle, idleFirst := newFamily(u.ID, at(0))
		idle.IdleTimeout = time.Hour
		mustCreateFamily(t, store, idle, idleFirst)
		ended, endedFirst := newFamily(u.ID, at(0))
		ended.ExpiresAt = at(2 * time.Hour)
		mustCreateFamily(t, store, ended, endedFirst)
		client, clientFirst := storedClientFamily(t, store, u.ID, "client-a", at(0))

		for _, c := range []struct {
			name   string
			fam    domain.RefreshFamily
			tok    domain.RefreshToken
			usedAt time.Time
		}{
			{"used", used, usedFirst, at(2 * time.Minute)},
			{"expired", expired, expiredFirst, expiredFirst.ExpiresAt},
			{"revoked", revoked, revokedFirst, at(2 * time.Minute)},
			{"idle", idle, idleFirst, at(time.Hour)},
			{"ended", ended, endedFirst, at(2 * time.Hour)},
			{"client", client, clientFirst, at(2 * time.Minute)},
		} {
			next := domain.RefreshToken{Hash: randomHex(32), IssuedAt: c.usedAt, ExpiresAt: c.usedAt.Add(time.Hour)}
			tok, f, ok, err := store.RotateOwn(ctx, c.tok.Hash, c.usedAt, next)
			if err != nil || ok {
				t.Errorf("RotateOwn(%s) = %v, %v; want false, nil", c.name, ok, err)
				continue
			}
			checkToken(t, tok, c.tok)
			checkFamily(t, f, c.fam)
			wantRead(t, store, c.tok.Hash, c.tok, c.fam)
			if _, _, err := store.Lookup(ctx, next.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
				t.Errorf("Lookup(successor refused for %s) = %v, want ErrRefreshTokenInvalid", c.name, err)
			}
		}
		// A microsecond earlier, the idle, ended and expired ones still
		// rotate: the limits are exclusive, as Active's.
		for _, c := range []struct {
			tok domain.RefreshToken
			end time.Time
		}{{idleFirst, at(time.Hour)}, {endedFirst, ended.ExpiresAt}, {expiredFirst, expiredFirst.ExpiresAt}} {
			usedAt := c.end.Add(-time.Microsecond)
			next := domain.RefreshToken{Hash: randomHex(32), IssuedAt: usedAt, ExpiresAt: usedAt.Add(time.Hour)}
			if _, _, ok, err := store.RotateOwn(ctx, c.tok.Hash, usedAt, next); err != nil || !ok {
				t.Errorf("RotateOwn(a microsecond before %s) = %v, %v; want true, nil", c.end.Format(time.RFC3339Nano), ok, err)
			}
		}
	})

	// Of concurrent RotateOwn and Rotate calls for one token, exactly one
	// rotates it, and the token's successor is the winner's. The workers
	// first rotate tokens of their own (so that a store's connections are
	// open and its statements ready), then start together, several rounds.
	t.Run("rotate_own_concurrent", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)

		const workers, rounds = 10, 5
		var warm sync.WaitGroup
		for range workers {
			_, own := storedFamily(t, store, u.ID, at(0))
			warm.Go(func() {
				if _, _, ok, err := store.RotateOwn(ctx, own.Hash, at(time.Hour), successorOf(own, at(time.Hour))); err != nil || !ok {
					t.Errorf("RotateOwn(warm-up) = %v, %v", ok, err)
				}
			})
		}
		warm.Wait()
		for range rounds {
			_, first := storedFamily(t, store, u.ID, at(0))
			raceRotations(t, store, first, workers, func(i int) bool { return i%2 == 0 })
		}
	})
}

// raceRotations has workers rotate first at once, worker i by RotateOwn
// when own(i) and by Rotate otherwise, and checks that exactly one did,
// that first's successor is the winner's, and that no loser's was stored.
func raceRotations(t *testing.T, store ports.RefreshTokenStore, first domain.RefreshToken, workers int, own func(int) bool) {
	t.Helper()
	ctx := t.Context()
	won := make([]bool, workers)
	succ := make([]domain.RefreshToken, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		usedAt := at(2*time.Hour + time.Duration(i)*time.Microsecond)
		succ[i] = successorOf(first, usedAt)
		wg.Go(func() {
			<-start
			var err error
			if own(i) {
				_, _, won[i], err = store.RotateOwn(ctx, first.Hash, usedAt, succ[i])
			} else {
				won[i], err = store.Rotate(ctx, first.Hash, usedAt, succ[i])
			}
			if err != nil {
				t.Errorf("rotation %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	tok, _, err := store.Lookup(ctx, first.Hash)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	winners := 0
	for i := range workers {
		_, _, lookErr := store.Lookup(ctx, succ[i].Hash)
		if won[i] {
			winners++
			if tok.SuccessorHash != succ[i].Hash || lookErr != nil {
				t.Errorf("winner %d: token's successor %s, Lookup(successor) %v", i, tok.SuccessorHash, lookErr)
			}
		} else if !errors.Is(lookErr, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(losing successor %d) = %v, want ErrRefreshTokenInvalid", i, lookErr)
		}
	}
	if winners != 1 {
		t.Errorf("%d concurrent rotations of one token succeeded, want exactly 1", winners)
	}
}

// wantRead checks that the token with hash reads back as tok in fam.
func wantRead(t *testing.T, store ports.RefreshTokenStore, hash string, tok domain.RefreshToken, fam domain.RefreshFamily) {
	t.Helper()
	got, f, err := store.Lookup(t.Context(), hash)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	checkToken(t, got, tok)
	checkFamily(t, f, fam)
}
