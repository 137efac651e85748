package application

import (
	"context"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// secondFactors is what the use cases that check, add or remove a second
// factor share: spending a TOTP or recovery code, keeping the account's
// MFAEnabled in step with its factors, proving that the caller owns the
// account, and the notices of a factor added or removed.
type secondFactors struct {
	core
	users    ports.UserRepository
	mfa      ports.MFAStore
	otp      ports.OneTimePasswords
	webhooks *webhookQueue
	mail     *mailQueue
	password currentPassword
}

// spendCode checks code as a TOTP code of totp (a confirmed factor; nil when
// the account has none) or, when it has the form of one, as one of the
// user's recovery codes, and spends it: a TOTP code's time step cannot be
// used again, a recovery code is used up. It reports whether a recovery
// code was spent, which the caller records (recoveryCodeUsed) once its
// transaction, if any, has committed. Anything else is
// domain.ErrInvalidMFACode.
func (f *secondFactors) spendCode(ctx context.Context, user domain.UserID, totp *domain.TOTPFactor, code string) (recovery bool, err error) {
	now := f.clock.Now()
	if totpCode, ok := domain.ParseTOTPCode(code); ok {
		if totp == nil {
			return false, domain.ErrInvalidMFACode
		}
		step, ok := f.otp.Match(totp.Secret, totpCode, now, totp.LastStep)
		if !ok {
			return false, domain.ErrInvalidMFACode
		}
		accepted, err := f.mfa.AcceptTOTPStep(ctx, user, step, now, false)
		if err != nil {
			return false, err
		}
		if !accepted {
			return false, domain.ErrInvalidMFACode
		}
		return false, nil
	}
	recoveryCode, ok := domain.ParseRecoveryCode(code)
	if !ok {
		return false, domain.ErrInvalidMFACode
	}
	return true, f.useRecoveryCode(ctx, user, recoveryCode, now)
}

// spendCodeNoted is spendCode outside a transaction, recording a spent
// recovery code at once.
func (f *secondFactors) spendCodeNoted(ctx context.Context, user domain.UserID, totp *domain.TOTPFactor, code string) error {
	recovery, err := f.spendCode(ctx, user, totp, code)
	if err == nil && recovery {
		f.recoveryCodeUsed(ctx, user)
	}
	return err
}

// useRecoveryCode uses up one of the user's recovery codes, or returns
// domain.ErrInvalidMFACode.
func (f *secondFactors) useRecoveryCode(ctx context.Context, user domain.UserID, code string, now time.Time) error {
	used, err := f.mfa.UseRecoveryCode(ctx, user, domain.HashRecoveryCode(user, code), now)
	if err != nil {
		return err
	}
	if !used {
		return domain.ErrInvalidMFACode
	}
	return nil
}

// recoveryCodeUsed records that a recovery code of the user was spent,
// with how many are left.
func (f *secondFactors) recoveryCodeUsed(ctx context.Context, user domain.UserID) {
	left := 0
	if summary, err := f.mfa.Summary(ctx, user); err == nil {
		left = summary.RecoveryCodesLeft
	}
	f.events.note(ctx, domain.RecoveryCodeUsedEvent(user, left))
	f.log.LogAttrs(ctx, slog.LevelInfo, "recovery code used", slog.String("user_id", user.String()), slog.Int("left", left))
}

// syncMFAEnabled makes the user's MFAEnabled say whether a factor is left,
// after one was removed; with none left, the recovery codes go too.
func (f *secondFactors) syncMFAEnabled(ctx context.Context, user domain.UserID, now time.Time) error {
	summary, err := f.mfa.Summary(ctx, user)
	if err != nil {
		return err
	}
	if !summary.Enabled() {
		if err := f.mfa.DeleteRecoveryCodes(ctx, user); err != nil {
			return err
		}
	}
	return f.setMFAEnabled(ctx, user, summary.Enabled(), now)
}

// setMFAEnabled stores the user's MFAEnabled when it changes, and queues
// user.mfa_enabled or user.mfa_disabled when it does.
func (f *secondFactors) setMFAEnabled(ctx context.Context, user domain.UserID, enabled bool, now time.Time) error {
	changed := false
	_, err := f.users.Update(ctx, user, func(u *domain.User) error {
		changed = u.MFAEnabled != enabled
		if changed {
			u.MFAEnabled, u.UpdatedAt = enabled, now
		}
		return nil
	})
	if err != nil || !changed {
		return err
	}
	typ := domain.WebhookUserMFADisabled
	if enabled {
		typ = domain.WebhookUserMFAEnabled
	}
	return f.webhooks.emit(ctx, typ, user, nil)
}
