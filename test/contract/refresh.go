package contract

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// RefreshTokenStore runs the contract of ports.RefreshTokenStore. newStores
// returns a refresh-token store and the user repository sharing its state:
// families belong to users, and deleting a user ends its families.
func RefreshTokenStore(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore)) {
	t.Run("create_and_lookup", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := storedFamily(t, store, u.ID, at(time.Minute))

		tok, f, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		checkToken(t, tok, first)
		checkFamily(t, f, fam)
		if _, _, err := store.Lookup(ctx, randomHex(32)); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(unknown) error = %v, want ErrRefreshTokenInvalid", err)
		}
	})

	// A family keeps how its session signed in; one stored without says
	// password, the only way before amr was recorded.
	t.Run("amr", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		for _, amr := range []domain.AMR{nil, {}, domain.AMRPassword, domain.AMRPasswordOTP, domain.AMRPasswordPasskey,
			domain.AMRPasskeyVerified, domain.AMRPasskey} {
			fam, first := newFamily(u.ID, at(time.Minute))
			fam.AMR = amr.Clone()
			mustCreateFamily(t, store, fam, first)
			for i := range fam.AMR {
				fam.AMR[i] = "x" // the caller's slice, after CreateFamily
			}
			fam.AMR = amr
			_, got, err := store.Lookup(ctx, first.Hash)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			checkFamily(t, got, fam)
			if len(amr) == 0 && !slices.Equal(got.AMR, domain.AMRPassword) {
				t.Errorf("family stored with amr %v reads back %v, want %v", amr, got.AMR, domain.AMRPassword)
			}
			// Rotation keeps it.
			next := successorOf(first, at(time.Hour))
			if ok, err := store.Rotate(ctx, first.Hash, at(time.Hour), next); err != nil || !ok {
				t.Fatalf("Rotate = %v, %v", ok, err)
			}
			if _, got, err = store.Lookup(ctx, next.Hash); err != nil {
				t.Fatalf("Lookup(successor): %v", err)
			}
			checkFamily(t, got, fam)
		}
		for _, amr := range []domain.AMR{{"pwd", "pwd"}, {"sms"}, {"pwd,otp"}, {""}} {
			fam, first := newFamily(u.ID, at(time.Minute))
			fam.AMR = amr
			if err := store.CreateFamily(ctx, fam, first); err == nil {
				t.Errorf("CreateFamily(amr %q) succeeded, want an error", amr)
			}
			if _, _, err := store.Lookup(ctx, first.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
				t.Errorf("Lookup(token of a family refused for its amr) = %v, want ErrRefreshTokenInvalid", err)
			}
		}
	})

	t.Run("create_family_of_unknown_user", func(t *testing.T) {
		t.Parallel()
		_, store := newStores(t)
		fam, first := newFamily(domain.NewUserID(at(0)), at(0))
		if err := store.CreateFamily(t.Context(), fam, first); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreateFamily(unknown user) error = %v, want ErrUserNotFound", err)
		}
		if _, _, err := store.Lookup(t.Context(), first.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(token of rejected family) error = %v, want ErrRefreshTokenInvalid", err)
		}
	})

	t.Run("rotate", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := storedFamily(t, store, u.ID, at(0))

		usedAt := at(time.Hour + 3*time.Microsecond)
		second := successorOf(first, usedAt)
		ok, err := store.Rotate(ctx, first.Hash, usedAt, second)
		if err != nil || !ok {
			t.Fatalf("Rotate = %v, %v; want true, nil", ok, err)
		}
		tok, f, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup(used): %v", err)
		}
		wantUsed := first
		wantUsed.UsedAt, wantUsed.SuccessorHash = &usedAt, second.Hash
		checkToken(t, tok, wantUsed)
		checkFamily(t, f, fam)
		tok, f, err = store.Lookup(ctx, second.Hash)
		if err != nil {
			t.Fatalf("Lookup(successor): %v", err)
		}
		checkToken(t, tok, second)
		checkFamily(t, f, fam)

		// A used token does not rotate again, and nothing is written.
		other := successorOf(first, usedAt.Add(time.Second))
		ok, err = store.Rotate(ctx, first.Hash, usedAt.Add(time.Second), other)
		if err != nil || ok {
			t.Fatalf("second Rotate = %v, %v; want false, nil", ok, err)
		}
		if tok, _, err = store.Lookup(ctx, first.Hash); err != nil {
			t.Fatalf("Lookup(used): %v", err)
		}
		checkToken(t, tok, wantUsed)
		if _, _, err := store.Lookup(ctx, other.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(refused successor) error = %v, want ErrRefreshTokenInvalid", err)
		}

		// A successor handed to another family is refused, and nothing is
		// written: the token stays unused.
		_, otherFirst := storedFamily(t, store, u.ID, at(0))
		stray := successorOf(otherFirst, usedAt.Add(time.Hour))
		if ok, err := store.Rotate(ctx, second.Hash, usedAt.Add(time.Hour), stray); err == nil || ok {
			t.Errorf("Rotate(successor of another family) = %v, %v; want false and an error", ok, err)
		}
		if tok, _, err = store.Lookup(ctx, second.Hash); err != nil {
			t.Fatalf("Lookup(successor): %v", err)
		}
		checkToken(t, tok, second)
		if _, _, err := store.Lookup(ctx, stray.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(stray successor) error = %v, want ErrRefreshTokenInvalid", err)
		}

		// The successor rotates in turn.
		third := successorOf(second, usedAt.Add(time.Hour))
		if ok, err = store.Rotate(ctx, second.Hash, usedAt.Add(time.Hour), third); err != nil || !ok {
			t.Fatalf("Rotate(successor) = %v, %v; want true, nil", ok, err)
		}

		if _, err := store.Rotate(ctx, randomHex(32), usedAt, successorOf(first, usedAt)); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Rotate(unknown) error = %v, want ErrRefreshTokenInvalid", err)
		}
	})

	t.Run("rotate_concurrent", func(t *testing.T) {
		t.Parallel()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		_, first := storedFamily(t, store, u.ID, at(0))
		raceRotations(t, store, first, 10, func(int) bool { return false })
	})

	t.Run("revoke_family", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		fam, first := storedFamily(t, store, u.ID, at(0))
		otherFam, otherFirst := storedFamily(t, store, u.ID, at(0))

		revokedAt := at(2*time.Hour + 5*time.Microsecond)
		if err := store.RevokeFamily(ctx, fam.ID, revokedAt); err != nil {
			t.Fatalf("RevokeFamily: %v", err)
		}
		wantFam := fam
		wantFam.RevokedAt = &revokedAt
		_, f, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		checkFamily(t, f, wantFam)

		usedAt := at(3 * time.Hour)
		succ := successorOf(first, usedAt)
		if ok, err := store.Rotate(ctx, first.Hash, usedAt, succ); !errors.Is(err, domain.ErrRefreshFamilyRevoked) || ok {
			t.Errorf("Rotate(revoked family) = %v, %v; want false, ErrRefreshFamilyRevoked", ok, err)
		}
		tok, _, err := store.Lookup(ctx, first.Hash)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		checkToken(t, tok, first)
		if _, _, err := store.Lookup(ctx, succ.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup(refused successor) error = %v, want ErrRefreshTokenInvalid", err)
		}

		// Revoking again, or an unknown family, is no error; the family
		// stays ended at the first revocation.
		if err := store.RevokeFamily(ctx, fam.ID, at(4*time.Hour)); err != nil {
			t.Errorf("RevokeFamily(revoked): %v", err)
		}
		if err := store.RevokeFamily(ctx, randomHex(16), at(4*time.Hour)); err != nil {
			t.Errorf("RevokeFamily(unknown): %v", err)
		}
		if _, f, err = store.Lookup(ctx, first.Hash); err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		checkFamily(t, f, wantFam)

		// The user's other session is untouched.
		if _, f, err = store.Lookup(ctx, otherFirst.Hash); err != nil {
			t.Fatalf("Lookup(other family): %v", err)
		}
		checkFamily(t, f, otherFam)
	})

	t.Run("rotate_racing_revoke", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		for range 10 {
			fam, first := storedFamily(t, store, u.ID, at(0))
			succ := successorOf(first, at(time.Hour))
			var (
				wg        sync.WaitGroup
				ok        bool
				rotateErr error
				revokeErr error
			)
			wg.Go(func() { ok, rotateErr = store.Rotate(ctx, first.Hash, at(time.Hour), succ) })
			wg.Go(func() { revokeErr = store.RevokeFamily(ctx, fam.ID, at(time.Hour)) })
			wg.Wait()
			if revokeErr != nil {
				t.Fatalf("RevokeFamily: %v", revokeErr)
			}
			switch {
			case rotateErr == nil && ok:
				// Rotated first: the successor exists, in the now revoked family.
				_, f, err := store.Lookup(ctx, succ.Hash)
				if err != nil {
					t.Fatalf("Lookup(successor): %v", err)
				}
				if f.RevokedAt == nil {
					t.Error("successor of a rotation racing a revocation is live")
				}
			case errors.Is(rotateErr, domain.ErrRefreshFamilyRevoked) && !ok:
				if _, _, err := store.Lookup(ctx, succ.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
					t.Errorf("Lookup(refused successor) error = %v, want ErrRefreshTokenInvalid", err)
				}
			default:
				t.Fatalf("Rotate racing RevokeFamily = %v, %v; want true, nil or false, ErrRefreshFamilyRevoked", ok, rotateErr)
			}
		}
	})

	t.Run("revoke_user", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u, other := twoUsers(t, users)
		famA, firstA := newFamily(u.ID, at(0))
		famB, firstB := newFamily(u.ID, at(time.Minute))
		famC, firstC := newFamily(other.ID, at(0))
		mustCreateFamily(t, store, famA, firstA)
		mustCreateFamily(t, store, famB, firstB)
		mustCreateFamily(t, store, famC, firstC)
		earlier := at(30 * time.Minute)
		if err := store.RevokeFamily(ctx, famA.ID, earlier); err != nil {
			t.Fatalf("RevokeFamily: %v", err)
		}

		revokedAt := at(time.Hour)
		ended, err := store.RevokeUser(ctx, u.ID, revokedAt)
		if err != nil {
			t.Fatalf("RevokeUser: %v", err)
		}
		// famA was revoked before: only famB ended now.
		if !slices.Equal(ended, []string{famB.ID}) {
			t.Errorf("RevokeUser ended %v, want [%s]", ended, famB.ID)
		}
		for _, c := range []struct {
			first   domain.RefreshToken
			fam     domain.RefreshFamily
			revoked *time.Time
		}{
			{firstA, famA, &earlier},
			{firstB, famB, &revokedAt},
			{firstC, famC, nil},
		} {
			_, f, err := store.Lookup(ctx, c.first.Hash)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			want := c.fam
			want.RevokedAt = c.revoked
			checkFamily(t, f, want)
		}
		if ok, err := store.Rotate(ctx, firstB.Hash, at(2*time.Hour), successorOf(firstB, at(2*time.Hour))); !errors.Is(err, domain.ErrRefreshFamilyRevoked) || ok {
			t.Errorf("Rotate(revoked user) = %v, %v; want false, ErrRefreshFamilyRevoked", ok, err)
		}
		if ended, err := store.RevokeUser(ctx, domain.NewUserID(at(0)), revokedAt); err != nil || len(ended) != 0 {
			t.Errorf("RevokeUser(no families) = %v, %v; want none, nil", ended, err)
		}
		if ended, err := store.RevokeUser(ctx, u.ID, at(2*time.Hour)); err != nil || len(ended) != 0 {
			t.Errorf("RevokeUser(again) = %v, %v; want none, nil", ended, err)
		}
	})

	refreshSessions(t, newStores)
	refreshLapse(t, newStores)
	refreshClients(t, newStores)
	refreshOwn(t, newStores)

	t.Run("delete_user_ends_families", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		users, store := newStores(t)
		u, other := twoUsers(t, users)
		_, first := storedFamily(t, store, u.ID, at(0))
		second := successorOf(first, at(time.Hour))
		if ok, err := store.Rotate(ctx, first.Hash, at(time.Hour), second); err != nil || !ok {
			t.Fatalf("Rotate = %v, %v; want true, nil", ok, err)
		}
		otherFam, otherFirst := storedFamily(t, store, other.ID, at(0))

		if err := users.Delete(ctx, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		for _, hash := range []string{first.Hash, second.Hash} {
			if _, _, err := store.Lookup(ctx, hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
				t.Errorf("Lookup(token of deleted user) error = %v, want ErrRefreshTokenInvalid", err)
			}
		}
		third := successorOf(second, at(2*time.Hour))
		if ok, err := store.Rotate(ctx, second.Hash, at(2*time.Hour), third); ok || !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Rotate(token of deleted user) = %v, %v; want false, ErrRefreshTokenInvalid", ok, err)
		}
		_, f, err := store.Lookup(ctx, otherFirst.Hash)
		if err != nil {
			t.Fatalf("Lookup(other user's token): %v", err)
		}
		checkFamily(t, f, otherFam)
	})
}

// newFamily returns a family of the user started at created, lasting 90
// days, and its first token.
func newFamily(userID domain.UserID, created time.Time) (domain.RefreshFamily, domain.RefreshToken) {
	fam := domain.RefreshFamily{
		ID:        randomHex(16),
		UserID:    userID,
		CreatedAt: created,
		ExpiresAt: created.Add(90 * 24 * time.Hour),
	}
	first := domain.RefreshToken{
		Hash:      randomHex(32),
		FamilyID:  fam.ID,
		UserID:    userID,
		IssuedAt:  created,
		ExpiresAt: created.Add(30 * 24 * time.Hour),
	}
	return fam, first
}

// successorOf returns a fresh token of prev's family issued at issued.
func successorOf(prev domain.RefreshToken, issued time.Time) domain.RefreshToken {
	return domain.RefreshToken{
		Hash:      randomHex(32),
		FamilyID:  prev.FamilyID,
		UserID:    prev.UserID,
		IssuedAt:  issued,
		ExpiresAt: issued.Add(30 * 24 * time.Hour),
	}
}

func mustCreateFamily(t *testing.T, store ports.RefreshTokenStore, f domain.RefreshFamily, first domain.RefreshToken) {
	t.Helper()
	if err := store.CreateFamily(t.Context(), f, first); err != nil {
		t.Fatalf("CreateFamily: %v", err)
	}
}
