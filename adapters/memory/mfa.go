package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// recoveryKey is the key of a stored recovery code: the user and the
// code's hash, unique together as in the SQL table.
type recoveryKey struct {
	user domain.UserID
	hash string
}

// recoveryCode is a stored recovery code: when it was made and used.
type recoveryCode struct {
	createdAt time.Time
	usedAt    *time.Time
}

// MFAStore is the in-memory ports.MFAStore. Like the SQL store it keeps
// each TOTP secret sealed by its SecretBox, with the user's id as
// associated data, and opens it on the way out, so that code tested
// against it meets the same errors.
type MFAStore struct {
	s   *Store
	box ports.SecretBox
}

var _ ports.MFAStore = (*MFAStore)(nil)

// PutTOTP implements ports.MFAStore: f is stored pending, whatever its
// ConfirmedAt.
func (r *MFAStore) PutTOTP(ctx context.Context, f domain.TOTPFactor) error {
	sealed, err := r.box.Seal(f.Secret, []byte(f.UserID))
	if err != nil {
		return fmt.Errorf("put totp factor: %w", err)
	}
	f = copyTOTPFactor(f)
	f.Secret, f.ConfirmedAt = sealed, nil
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[f.UserID]; !ok {
		return fmt.Errorf("put totp factor: %w", domain.ErrUserNotFound)
	}
	if old, ok := s.totp[f.UserID]; ok && old.Confirmed() {
		return fmt.Errorf("put totp factor: %w", domain.ErrMFAAlreadyEnabled)
	}
	s.totp[f.UserID] = f
	return nil
}

// TOTP implements ports.MFAStore. A secret that does not open is the
// box's error.
func (r *MFAStore) TOTP(ctx context.Context, user domain.UserID) (domain.TOTPFactor, error) {
	s := r.s
	defer s.lock(ctx)()
	f, ok := s.totp[user]
	if !ok {
		return domain.TOTPFactor{}, fmt.Errorf("totp factor: %w", domain.ErrMFANotEnabled)
	}
	secret, err := r.box.Open(f.Secret, []byte(user))
	if err != nil {
		return domain.TOTPFactor{}, fmt.Errorf("totp factor of %s: %w", user, err)
	}
	f = copyTOTPFactor(f)
	f.Secret = secret
	return f, nil
}

// AcceptTOTPStep implements ports.MFAStore under the store's lock, which
// makes concurrent acceptances one at a time.
func (r *MFAStore) AcceptTOTPStep(ctx context.Context, user domain.UserID, step int64, at time.Time, confirm bool) (bool, error) {
	s := r.s
	defer s.lock(ctx)()
	f, ok := s.totp[user]
	if !ok || step <= f.LastStep || f.Confirmed() == confirm {
		return false, nil
	}
	f.LastStep = step
	if confirm {
		f.ConfirmedAt = normTimePtr(&at)
	}
	s.totp[user] = f
	return true, nil
}

// DeleteTOTP implements ports.MFAStore.
func (r *MFAStore) DeleteTOTP(ctx context.Context, user domain.UserID) (bool, error) {
	s := r.s
	defer s.lock(ctx)()
	f, ok := s.totp[user]
	delete(s.totp, user)
	return ok && f.Confirmed(), nil
}

// ReplaceRecoveryCodes implements ports.MFAStore. A hash given twice is
// stored once. It returns domain.ErrUserNotFound when there is no such
// user and hashes is not empty, as the SQL foreign key does.
func (r *MFAStore) ReplaceRecoveryCodes(ctx context.Context, user domain.UserID, hashes []string, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[user]; !ok && len(hashes) > 0 {
		return fmt.Errorf("replace recovery codes: %w", domain.ErrUserNotFound)
	}
	s.deleteRecoveryCodes(user)
	for _, h := range hashes {
		s.recovery[recoveryKey{user, h}] = recoveryCode{createdAt: normTime(at)}
	}
	return nil
}

// UseRecoveryCode implements ports.MFAStore under the store's lock.
func (r *MFAStore) UseRecoveryCode(ctx context.Context, user domain.UserID, hash string, at time.Time) (bool, error) {
	s := r.s
	defer s.lock(ctx)()
	k := recoveryKey{user, hash}
	c, ok := s.recovery[k]
	if !ok || c.usedAt != nil {
		return false, nil
	}
	c.usedAt = normTimePtr(&at)
	s.recovery[k] = c
	return true, nil
}

// DeleteRecoveryCodes implements ports.MFAStore.
func (r *MFAStore) DeleteRecoveryCodes(ctx context.Context, user domain.UserID) error {
	s := r.s
	defer s.lock(ctx)()
	s.deleteRecoveryCodes(user)
	return nil
}

// Summary implements ports.MFAStore.
func (r *MFAStore) Summary(ctx context.Context, user domain.UserID) (domain.MFASummary, error) {
	s := r.s
	defer s.lock(ctx)()
	var sum domain.MFASummary
	sum.TOTP = s.totp[user].Confirmed()
	for _, p := range s.passkeys {
		if p.UserID == user {
			sum.Passkeys++
		}
	}
	for k, c := range s.recovery {
		if k.user == user && c.usedAt == nil {
			sum.RecoveryCodesLeft++
		}
	}
	return sum, nil
}

// Reencrypt re-seals every TOTP secret that is not sealed under the box's
// current key and returns how many it changed; a secret that does not
// open changes nothing. It is the SQL store's, for the contract suite.
func (r *MFAStore) Reencrypt(ctx context.Context) (int, error) {
	s := r.s
	defer s.lock(ctx)()
	resealed := map[domain.UserID][]byte{}
	for user, f := range s.totp {
		secret, err := r.box.Open(f.Secret, []byte(user))
		if err != nil {
			return 0, fmt.Errorf("re-encrypt totp secret of %s: %w", user, err)
		}
		if r.box.Current(f.Secret) {
			continue
		}
		if resealed[user], err = r.box.Seal(secret, []byte(user)); err != nil {
			return 0, fmt.Errorf("re-encrypt totp secret of %s: %w", user, err)
		}
	}
	for user, sealed := range resealed {
		f := s.totp[user]
		f.Secret = sealed
		s.totp[user] = f
	}
	return len(resealed), nil
}

// deleteRecoveryCodes removes the user's recovery codes; the caller holds
// the lock.
func (s *Store) deleteRecoveryCodes(user domain.UserID) {
	for k := range s.recovery {
		if k.user == user {
			delete(s.recovery, k)
		}
	}
}

// deleteSecondFactors removes what belongs to a deleted user, as the SQL
// foreign keys do: its TOTP factor, recovery codes, mfaTokens, passkeys
// and passkey ceremonies. The caller holds the lock.
func (s *Store) deleteSecondFactors(user domain.UserID) {
	delete(s.totp, user)
	s.deleteRecoveryCodes(user)
	for hash, c := range s.challenges {
		if c.UserID == user {
			delete(s.challenges, hash)
		}
	}
	for id, p := range s.passkeys {
		if p.UserID == user {
			delete(s.passkeys, id)
		}
	}
	for id, c := range s.ceremonies {
		if c.UserID == user {
			delete(s.ceremonies, id)
		}
	}
}
