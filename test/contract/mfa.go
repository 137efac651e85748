package contract

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// MFAStorage is one empty storage of an adapter, with what the contract
// of ports.MFAStore needs besides the port: the users the factors belong
// to, the passkeys Summary counts, and, to check that TOTP secrets are
// sealed at rest, the stored bytes and a way to tamper with them.
type MFAStorage struct {
	Users    ports.UserRepository
	Passkeys ports.PasskeyStore
	// Open returns an MFA store over this storage that seals and opens
	// TOTP secrets with box. Stores opened with different boxes share the
	// rows.
	Open func(box ports.SecretBox) ports.MFAStore
	// Stored returns the user's TOTP secret as it is stored.
	Stored func(t *testing.T, user domain.UserID) []byte
	// SetStored overwrites the user's stored TOTP secret, as somebody who
	// can write to the database could.
	SetStored func(t *testing.T, user domain.UserID, stored []byte)
	// Reencrypt re-seals every TOTP secret under box's current key, as
	// `userd secrets reencrypt` does, and returns how many changed.
	Reencrypt func(ctx context.Context, box ports.SecretBox) (int, error)
}

// newTOTP returns a pending factor of the user made at created, with a
// secret holding zero bytes and high bits that a text column would
// mangle.
func newTOTP(user domain.UserID, created time.Time) domain.TOTPFactor {
	secret := append([]byte{0x00, 0xff}, []byte(randomHex(8))...)
	secret = append(secret, 0x80, 0x00)
	return domain.TOTPFactor{UserID: user, Secret: secret, CreatedAt: created}
}

func checkTOTP(t *testing.T, got, want domain.TOTPFactor) {
	t.Helper()
	if got.UserID != want.UserID || !bytes.Equal(got.Secret, want.Secret) || !sameTime(got.CreatedAt, want.CreatedAt) ||
		!sameTimePtr(got.ConfirmedAt, want.ConfirmedAt) || got.LastStep != want.LastStep {
		t.Errorf("totp factor mismatch:\n got {User:%s Secret:%x Created:%s Confirmed:%s LastStep:%d}\nwant {User:%s Secret:%x Created:%s Confirmed:%s LastStep:%d}",
			got.UserID, got.Secret, got.CreatedAt.Format(time.RFC3339Nano), fmtTimePtr(got.ConfirmedAt), got.LastStep,
			want.UserID, want.Secret, want.CreatedAt.Format(time.RFC3339Nano), fmtTimePtr(want.ConfirmedAt), want.LastStep)
	}
}

// checkStoredTOTP checks that the user's factor is want.
func checkStoredTOTP(t *testing.T, store ports.MFAStore, want domain.TOTPFactor) {
	t.Helper()
	got, err := store.TOTP(t.Context(), want.UserID)
	if err != nil {
		t.Fatalf("TOTP(%s): %v", want.UserID, err)
	}
	checkTOTP(t, got, want)
}

// checkNoTOTP checks that the user has no factor.
func checkNoTOTP(t *testing.T, store ports.MFAStore, user domain.UserID) {
	t.Helper()
	if got, err := store.TOTP(t.Context(), user); !errors.Is(err, domain.ErrMFANotEnabled) {
		t.Errorf("TOTP(%s) = %+v, %v; want ErrMFANotEnabled", user, got, err)
	}
}

func checkSummary(t *testing.T, store ports.MFAStore, user domain.UserID, want domain.MFASummary) {
	t.Helper()
	got, err := store.Summary(t.Context(), user)
	if err != nil || got != want {
		t.Errorf("Summary(%s) = %+v, %v; want %+v", user, got, err, want)
	}
}

// countTrue runs fn in n goroutines at once and returns how many reported
// true; an error fails the test.
func countTrue(t *testing.T, n int, fn func(i int) (bool, error)) int {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for i := range n {
		wg.Go(func() {
			ok, err := fn(i)
			if err != nil {
				t.Errorf("concurrent call %d: %v", i, err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return wins
}

// MFAStore runs the contract of ports.MFAStore over the storages that
// newStorage makes.
func MFAStore(t *testing.T, newStorage func(t *testing.T) MFAStorage) {
	// setup returns a storage, its store under a fresh secret key, and a
	// user of it.
	setup := func(t *testing.T) (MFAStorage, ports.MFAStore, domain.User) {
		t.Helper()
		s := newStorage(t)
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		return s, s.Open(newBox(t, secretbox.NewKey())), u
	}
	put := func(t *testing.T, store ports.MFAStore, f domain.TOTPFactor) {
		t.Helper()
		if err := store.PutTOTP(t.Context(), f); err != nil {
			t.Fatalf("PutTOTP: %v", err)
		}
	}
	accept := func(t *testing.T, store ports.MFAStore, user domain.UserID, step int64, when time.Time, confirm, want bool) {
		t.Helper()
		if ok, err := store.AcceptTOTPStep(t.Context(), user, step, when, confirm); err != nil || ok != want {
			t.Errorf("AcceptTOTPStep(step %d, confirm %v) = %v, %v; want %v", step, confirm, ok, err, want)
		}
	}
	// confirmed stores a factor of the user confirmed at step 100 and
	// returns it.
	confirmed := func(t *testing.T, store ports.MFAStore, user domain.UserID) domain.TOTPFactor {
		t.Helper()
		f := newTOTP(user, at(time.Minute))
		put(t, store, f)
		accept(t, store, user, 100, at(2*time.Minute), true, true)
		f.ConfirmedAt, f.LastStep = ptrTo(at(2*time.Minute)), 100
		return f
	}

	t.Run("put_pending_and_read", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		checkNoTOTP(t, store, u.ID)
		f := newTOTP(u.ID, at(time.Minute+7*time.Microsecond))
		// Stored pending, whatever the caller says.
		in := f
		in.ConfirmedAt = ptrTo(at(time.Minute))
		put(t, store, in)
		checkStoredTOTP(t, store, f)
		checkSummary(t, store, u.ID, domain.MFASummary{})
		// A pending factor is replaced.
		g := newTOTP(u.ID, at(time.Hour))
		put(t, store, g)
		checkStoredTOTP(t, store, g)
	})

	t.Run("unknown_user", func(t *testing.T) {
		t.Parallel()
		_, store, _ := setup(t)
		stranger := domain.NewUserID(at(0))
		if err := store.PutTOTP(t.Context(), newTOTP(stranger, at(0))); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("PutTOTP(unknown user) = %v, want ErrUserNotFound", err)
		}
		checkNoTOTP(t, store, stranger)
		accept(t, store, stranger, 1, at(0), true, false)
		if ok, err := store.DeleteTOTP(t.Context(), stranger); err != nil || ok {
			t.Errorf("DeleteTOTP(unknown user) = %v, %v; want false", ok, err)
		}
		checkSummary(t, store, stranger, domain.MFASummary{})
		if err := store.ReplaceRecoveryCodes(t.Context(), stranger, []string{"h"}, at(0)); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ReplaceRecoveryCodes(unknown user) = %v, want ErrUserNotFound", err)
		}
	})

	t.Run("values_are_copies", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		f := newTOTP(u.ID, at(0))
		want := f
		want.Secret = bytes.Clone(f.Secret)
		put(t, store, f)
		f.Secret[0] ^= 0xff // the caller's slice, after PutTOTP
		got, err := store.TOTP(t.Context(), u.ID)
		if err != nil {
			t.Fatalf("TOTP: %v", err)
		}
		got.Secret[1] ^= 0xff // the returned slice
		checkStoredTOTP(t, store, want)
	})

	t.Run("confirm", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		f := newTOTP(u.ID, at(0))
		put(t, store, f)
		// A pending factor accepts no code without confirm.
		accept(t, store, u.ID, 100, at(time.Minute), false, false)
		checkStoredTOTP(t, store, f)
		confirmedAt := at(time.Minute + 3*time.Microsecond)
		accept(t, store, u.ID, 100, confirmedAt, true, true)
		f.ConfirmedAt, f.LastStep = &confirmedAt, 100
		checkStoredTOTP(t, store, f)
		checkSummary(t, store, u.ID, domain.MFASummary{TOTP: true})
		// A confirmed factor is not confirmed again, nor replaced.
		accept(t, store, u.ID, 101, at(time.Hour), true, false)
		if err := store.PutTOTP(t.Context(), newTOTP(u.ID, at(time.Hour))); !errors.Is(err, domain.ErrMFAAlreadyEnabled) {
			t.Errorf("PutTOTP(over a confirmed factor) = %v, want ErrMFAAlreadyEnabled", err)
		}
		checkStoredTOTP(t, store, f)
	})

	t.Run("steps_only_forward", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		f := confirmed(t, store, u.ID)
		accept(t, store, u.ID, 100, at(time.Hour), false, false) // the confirming step, replayed
		accept(t, store, u.ID, 99, at(time.Hour), false, false)
		accept(t, store, u.ID, 101, at(time.Hour), false, true)
		accept(t, store, u.ID, 101, at(time.Hour), false, false) // replayed
		accept(t, store, u.ID, 103, at(time.Hour), false, true)
		accept(t, store, u.ID, 102, at(time.Hour), false, false) // after a later one
		f.LastStep = 103
		checkStoredTOTP(t, store, f)
	})

	t.Run("concurrent_accept", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		put(t, store, newTOTP(u.ID, at(0)))
		const workers = 16
		if wins := countTrue(t, workers, func(int) (bool, error) {
			return store.AcceptTOTPStep(t.Context(), u.ID, 100, at(time.Minute), true)
		}); wins != 1 {
			t.Errorf("%d of %d concurrent confirmations succeeded, want 1", wins, workers)
		}
		if wins := countTrue(t, workers, func(int) (bool, error) {
			return store.AcceptTOTPStep(t.Context(), u.ID, 101, at(2*time.Minute), false)
		}); wins != 1 {
			t.Errorf("%d of %d concurrent acceptances of one step succeeded, want 1", wins, workers)
		}
	})

	t.Run("delete_totp", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		put(t, store, newTOTP(u.ID, at(0)))
		if ok, err := store.DeleteTOTP(t.Context(), u.ID); err != nil || ok {
			t.Errorf("DeleteTOTP(pending) = %v, %v; want false", ok, err)
		}
		checkNoTOTP(t, store, u.ID)
		if ok, err := store.DeleteTOTP(t.Context(), u.ID); err != nil || ok {
			t.Errorf("DeleteTOTP(none) = %v, %v; want false", ok, err)
		}
		confirmed(t, store, u.ID)
		if ok, err := store.DeleteTOTP(t.Context(), u.ID); err != nil || !ok {
			t.Errorf("DeleteTOTP(confirmed) = %v, %v; want true", ok, err)
		}
		checkNoTOTP(t, store, u.ID)
		checkSummary(t, store, u.ID, domain.MFASummary{})
		// Enrolment starts over.
		g := newTOTP(u.ID, at(time.Hour))
		put(t, store, g)
		checkStoredTOTP(t, store, g)
	})

	t.Run("recovery_codes", func(t *testing.T) {
		t.Parallel()
		s, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		ctx := t.Context()
		use := func(user domain.UserID, hash string, want bool) {
			t.Helper()
			if ok, err := store.UseRecoveryCode(ctx, user, hash, at(time.Hour)); err != nil || ok != want {
				t.Errorf("UseRecoveryCode(%s…) = %v, %v; want %v", hash[:8], ok, err, want)
			}
		}
		hashes := func(user domain.UserID) []string {
			var out []string
			for _, c := range domain.NewRecoveryCodes() {
				out = append(out, domain.HashRecoveryCode(user, c))
			}
			return out
		}
		mine, theirs := hashes(u.ID), hashes(other.ID)
		if err := store.ReplaceRecoveryCodes(ctx, u.ID, mine, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		if err := store.ReplaceRecoveryCodes(ctx, other.ID, theirs, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		checkSummary(t, store, u.ID, domain.MFASummary{RecoveryCodesLeft: domain.RecoveryCodeCount})
		use(u.ID, mine[0], true)
		use(u.ID, mine[0], false) // once only
		use(u.ID, theirs[1], false)
		use(other.ID, mine[1], false)
		use(u.ID, domain.HashRecoveryCode(u.ID, "aaaaa-aaaaa"), false)
		checkSummary(t, store, u.ID, domain.MFASummary{RecoveryCodesLeft: domain.RecoveryCodeCount - 1})
		checkSummary(t, store, other.ID, domain.MFASummary{RecoveryCodesLeft: domain.RecoveryCodeCount})

		// New codes void the old ones, used or not.
		fresh := hashes(u.ID)
		if err := store.ReplaceRecoveryCodes(ctx, u.ID, fresh, at(time.Minute)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		checkSummary(t, store, u.ID, domain.MFASummary{RecoveryCodesLeft: domain.RecoveryCodeCount})
		use(u.ID, mine[1], false)
		use(u.ID, fresh[1], true)

		if err := store.DeleteRecoveryCodes(ctx, u.ID); err != nil {
			t.Fatalf("DeleteRecoveryCodes: %v", err)
		}
		checkSummary(t, store, u.ID, domain.MFASummary{})
		use(u.ID, fresh[2], false)
		checkSummary(t, store, other.ID, domain.MFASummary{RecoveryCodesLeft: domain.RecoveryCodeCount})
		if err := store.ReplaceRecoveryCodes(ctx, u.ID, nil, at(time.Hour)); err != nil {
			t.Errorf("ReplaceRecoveryCodes(none): %v", err)
		}
	})

	t.Run("concurrent_recovery_use", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		hash := domain.HashRecoveryCode(u.ID, domain.NewRecoveryCodes()[0])
		if err := store.ReplaceRecoveryCodes(t.Context(), u.ID, []string{hash}, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		const workers = 16
		if wins := countTrue(t, workers, func(i int) (bool, error) {
			return store.UseRecoveryCode(t.Context(), u.ID, hash, at(time.Duration(i)*time.Second))
		}); wins != 1 {
			t.Errorf("%d of %d concurrent uses of one recovery code succeeded, want 1", wins, workers)
		}
	})

	t.Run("summary", func(t *testing.T) {
		t.Parallel()
		s, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		ctx := t.Context()
		confirmed(t, store, u.ID)
		put(t, store, newTOTP(other.ID, at(0))) // pending: not counted
		for i, user := range []domain.UserID{u.ID, u.ID, other.ID} {
			if err := s.Passkeys.CreatePasskey(ctx, newPasskey(user, at(time.Duration(i)*time.Second))); err != nil {
				t.Fatalf("CreatePasskey: %v", err)
			}
		}
		codes := []string{"h1", "h2", "h3"}
		if err := store.ReplaceRecoveryCodes(ctx, u.ID, codes, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		if ok, err := store.UseRecoveryCode(ctx, u.ID, "h2", at(time.Minute)); err != nil || !ok {
			t.Fatalf("UseRecoveryCode = %v, %v", ok, err)
		}
		checkSummary(t, store, u.ID, domain.MFASummary{TOTP: true, Passkeys: 2, RecoveryCodesLeft: 2})
		checkSummary(t, store, other.ID, domain.MFASummary{Passkeys: 1})
		checkSummary(t, store, domain.NewUserID(at(0)), domain.MFASummary{})
	})

	t.Run("deleted_with_the_user", func(t *testing.T) {
		t.Parallel()
		s, store, u := setup(t)
		ctx := t.Context()
		confirmed(t, store, u.ID)
		if err := store.ReplaceRecoveryCodes(ctx, u.ID, []string{"h1", "h2"}, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		if err := s.Passkeys.CreatePasskey(ctx, newPasskey(u.ID, at(0))); err != nil {
			t.Fatalf("CreatePasskey: %v", err)
		}
		if err := s.Users.Delete(ctx, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		checkNoTOTP(t, store, u.ID)
		checkSummary(t, store, u.ID, domain.MFASummary{})
		if ok, err := store.UseRecoveryCode(ctx, u.ID, "h1", at(time.Hour)); err != nil || ok {
			t.Errorf("UseRecoveryCode(deleted user) = %v, %v; want false", ok, err)
		}
	})

	// What is stored is sealed: the secret is not in it, only a box with
	// the key that sealed it opens it, and it is bound to its user.
	t.Run("sealed_at_rest", func(t *testing.T) {
		t.Parallel()
		s, _, u := setup(t)
		ctx, key := t.Context(), secretbox.NewKey()
		store := s.Open(newBox(t, key))
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		f, g := newTOTP(u.ID, at(0)), newTOTP(other.ID, at(0))
		put(t, store, f)
		put(t, store, g)
		stored := s.Stored(t, u.ID)
		if bytes.Contains(stored, f.Secret[2:len(f.Secret)-2]) || len(stored) <= len(f.Secret) {
			t.Errorf("stored secret %x holds the secret %x in clear", stored, f.Secret)
		}
		if _, err := s.Open(newBox(t, secretbox.NewKey())).TOTP(ctx, u.ID); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("TOTP with another secret key = %v, want domain.ErrSecretKeyUnknown", err)
		}
		if err := s.Open(newBox(t)).PutTOTP(ctx, newTOTP(u.ID, at(0))); !errors.Is(err, domain.ErrSecretKeyMissing) {
			t.Errorf("PutTOTP without a secret key = %v, want domain.ErrSecretKeyMissing", err)
		}
		// Copied to another user's row, or altered, it does not open.
		original := s.Stored(t, other.ID)
		s.SetStored(t, other.ID, stored)
		if got, err := store.TOTP(ctx, other.ID); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("TOTP with another user's secret = %x, %v; want domain.ErrSecretInvalid", got.Secret, err)
		}
		altered := bytes.Clone(original)
		altered[len(altered)-1] ^= 1
		s.SetStored(t, other.ID, altered)
		if _, err := store.TOTP(ctx, other.ID); !errors.Is(err, domain.ErrSecretInvalid) {
			t.Errorf("TOTP with an altered secret = %v, want domain.ErrSecretInvalid", err)
		}
		s.SetStored(t, other.ID, original)
		checkStoredTOTP(t, store, g)
		checkStoredTOTP(t, store, f)
	})

	// Re-encryption moves every TOTP secret to the current key, after
	// which the old one can go.
	t.Run("reencrypt", func(t *testing.T) {
		t.Parallel()
		s, _, u := setup(t)
		ctx := t.Context()
		oldKey, newKey2 := secretbox.NewKey(), secretbox.NewKey()
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		before := s.Open(newBox(t, oldKey))
		f := confirmed(t, before, u.ID)
		g := newTOTP(other.ID, at(0))
		put(t, before, g)
		both := newBox(t, newKey2, oldKey)
		if _, err := s.Open(newBox(t, newKey2)).TOTP(ctx, u.ID); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("TOTP with the new key only, before re-encryption = %v, want domain.ErrSecretKeyUnknown", err)
		}
		// Without the key a secret was sealed under, nothing is rewritten.
		if n, err := s.Reencrypt(ctx, newBox(t, newKey2)); !errors.Is(err, domain.ErrSecretKeyUnknown) || n != 0 {
			t.Errorf("Reencrypt without the old key = %d, %v; want domain.ErrSecretKeyUnknown", n, err)
		}
		if n, err := s.Reencrypt(ctx, both); err != nil || n != 2 {
			t.Fatalf("Reencrypt = %d, %v; want the 2 secrets sealed under the old key", n, err)
		}
		if n, err := s.Reencrypt(ctx, both); err != nil || n != 0 {
			t.Errorf("second Reencrypt = %d, %v; want nothing left to do", n, err)
		}
		after := s.Open(newBox(t, newKey2))
		checkStoredTOTP(t, after, f)
		checkStoredTOTP(t, after, g)
		if _, err := s.Open(newBox(t, oldKey)).TOTP(ctx, u.ID); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("TOTP with the old key only, after re-encryption = %v, want domain.ErrSecretKeyUnknown", err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
