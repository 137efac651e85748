package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// MFAService manages second factors: a user's TOTP factor and recovery
// codes, the summary of its factors, and an admin's reset of them all.
type MFAService struct {
	core
	mfaPorts
}

// mfaPorts are what the MFAService uses.
type mfaPorts struct {
	users    ports.UserRepository
	mfa      ports.MFAStore
	otp      ports.OneTimePasswords
	passkeys ports.PasskeyStore
	tokens   ports.RefreshTokenStore
	tx       ports.Transactor
	// factors prove the owner and keep MFAEnabled; webhooks and
	// sessionEnds carry out an admin's reset.
	factors     *secondFactors
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	delivery    wakeup
}

// Field names of the second-factor requests, for validation errors.
const (
	FieldCode         = "code"
	FieldRecoveryCode = "recoveryCode"
	FieldMFAToken     = "mfaToken"
)

// Summary tells the caller which second factors its account has.
func (s *MFAService) Summary(ctx context.Context, actor *domain.Principal) (domain.MFASummary, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return domain.MFASummary{}, err
	}
	return s.mfa.Summary(ctx, self.ID)
}

// TOTPEnrolment is a pending TOTP factor, shown once: the secret in base32
// and the otpauth URI an authenticator app reads (as a QR code).
type TOTPEnrolment struct {
	Secret string
	URI    string
}

// BeginTOTP makes a pending TOTP factor for the caller, replacing a
// pending one, once the caller has proven to be the account's owner
// (proveFactorChange: its current password under the login lock-out, and
// for an account with a passkey a strong session too). An account whose
// factor is confirmed gets domain.ErrMFAAlreadyEnabled, before any proof
// is asked for.
func (s *MFAService) BeginTOTP(ctx context.Context, actor *domain.Principal, currentPassword *string) (TOTPEnrolment, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return TOTPEnrolment{}, err
	}
	if f, err := s.mfa.TOTP(ctx, self.ID); err == nil && f.Confirmed() {
		return TOTPEnrolment{}, domain.ErrMFAAlreadyEnabled
	} else if err != nil && !errors.Is(err, domain.ErrMFANotEnabled) {
		return TOTPEnrolment{}, err
	}
	if err := s.factors.proveFactorChange(ctx, actor, self, domain.AddFactor, currentPassword); err != nil {
		return TOTPEnrolment{}, err
	}
	secret, encoded, uri, err := s.otp.NewSecret(string(self.Email))
	if err != nil {
		return TOTPEnrolment{}, fmt.Errorf("new totp secret: %w", err)
	}
	f := domain.TOTPFactor{UserID: self.ID, Secret: secret, CreatedAt: s.clock.Now()}
	if err := s.mfa.PutTOTP(ctx, f); err != nil {
		if errors.Is(err, domain.ErrUserNotFound) {
			return TOTPEnrolment{}, domain.ErrInvalidToken
		}
		return TOTPEnrolment{}, err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "totp enrolment begun", slog.String("user_id", self.ID.String()))
	return TOTPEnrolment{Secret: encoded, URI: uri}, nil
}

// ConfirmTOTP activates the caller's pending factor with a first code and
// returns fresh recovery codes, shown once.
func (s *MFAService) ConfirmTOTP(ctx context.Context, actor *domain.Principal, code *string) ([]string, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return nil, err
	}
	raw, err := requiredCode(code)
	if err != nil {
		return nil, err
	}
	f, err := s.mfa.TOTP(ctx, self.ID)
	if err != nil {
		return nil, err
	}
	if f.Confirmed() {
		return nil, domain.ErrMFAAlreadyEnabled
	}
	parsed, ok := domain.ParseTOTPCode(raw)
	if !ok {
		return nil, domain.ErrInvalidMFACode
	}
	now := s.clock.Now()
	step, ok := s.otp.Match(f.Secret, parsed, now, f.LastStep)
	if !ok {
		return nil, domain.ErrInvalidMFACode
	}
	codes := domain.NewRecoveryCodes()
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		accepted, err := s.mfa.AcceptTOTPStep(ctx, self.ID, step, now, true)
		if err != nil {
			return err
		}
		if !accepted {
			// A concurrent confirmation won, or the factor was replaced.
			return domain.ErrInvalidMFACode
		}
		if err := s.mfa.ReplaceRecoveryCodes(ctx, self.ID, hashRecoveryCodes(self.ID, codes), now); err != nil {
			return err
		}
		if err := s.factors.setMFAEnabled(ctx, self.ID, true, now); err != nil {
			return err
		}
		return s.factors.queueFactorNotice(ctx, self, domain.MailFactorAdded, domain.FactorTOTP)
	})
	if err != nil {
		return nil, err
	}
	s.delivery.wake()
	s.events.note(ctx, domain.TOTPEnabledEvent(self.ID))
	s.log.LogAttrs(ctx, slog.LevelInfo, "totp enabled", slog.String("user_id", self.ID.String()))
	return codes, nil
}

// DisableTOTP removes the caller's confirmed factor, proven by a TOTP or
// recovery code, counted under the login lock-out (spendCodeCounted). When no passkey is left either, the recovery codes go
// with it: they stand in for a second factor the account no longer has.
func (s *MFAService) DisableTOTP(ctx context.Context, actor *domain.Principal, code *string) error {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return err
	}
	raw, err := requiredCode(code)
	if err != nil {
		return err
	}
	f, err := s.mfa.TOTP(ctx, self.ID)
	if err != nil {
		return err
	}
	if !f.Confirmed() {
		return domain.ErrMFANotEnabled
	}
	if err := s.factors.spendCodeCounted(ctx, actor, self, &f, raw); err != nil {
		return err
	}
	now := s.clock.Now()
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if _, err := s.mfa.DeleteTOTP(ctx, self.ID); err != nil {
			return err
		}
		if err := s.factors.syncMFAEnabled(ctx, self.ID, now); err != nil {
			return err
		}
		return s.factors.queueFactorNotice(ctx, self, domain.MailFactorRemoved, domain.FactorTOTP)
	})
	if err != nil {
		return err
	}
	s.delivery.wake()
	s.events.note(ctx, domain.TOTPDisabledEvent(self.ID))
	s.log.LogAttrs(ctx, slog.LevelInfo, "totp disabled", slog.String("user_id", self.ID.String()))
	return nil
}

// RenewRecoveryCodes replaces the caller's recovery codes, proven by a
// TOTP or recovery code, counted under the login lock-out. An account whose only factors are passkeys may
// have no code to give (none yet, or its codes lost, the usual reason to
// renew them): without one, its session must have signed in with a second
// factor (or recently).
func (s *MFAService) RenewRecoveryCodes(ctx context.Context, actor *domain.Principal, code *string) ([]string, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return nil, err
	}
	summary, err := s.mfa.Summary(ctx, self.ID)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	hasCode := code != nil && *code != ""
	switch {
	case !summary.Enabled():
		return nil, domain.ErrMFANotEnabled
	case summary.TOTP || (hasCode && summary.RecoveryCodesLeft > 0):
		raw, err := requiredCode(code)
		if err != nil {
			return nil, err
		}
		var f *domain.TOTPFactor
		if summary.TOTP {
			got, err := s.mfa.TOTP(ctx, self.ID)
			if err != nil {
				return nil, err
			}
			f = &got
		}
		if err := s.factors.spendCodeCounted(ctx, actor, self, f, raw); err != nil {
			return nil, err
		}
	case hasCode:
		// Nothing could verify it.
		return nil, domain.ErrInvalidMFACode
	case !actor.Session.Strong(now):
		return nil, domain.ErrRecentSignInRequired
	}
	codes := domain.NewRecoveryCodes()
	if err := s.mfa.ReplaceRecoveryCodes(ctx, self.ID, hashRecoveryCodes(self.ID, codes), now); err != nil {
		return nil, err
	}
	s.events.note(ctx, domain.RecoveryCodesRenewedEvent(self.ID))
	return codes, nil
}

// Reset removes every second factor and passkey of a user and ends its
// sessions: for an admin, when a user lost its devices.
func (s *MFAService) Reset(ctx context.Context, actor *domain.Principal, rawID string) error {
	id, err := adminOnUser(ctx, s.users, actor, rawID)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	var (
		totp     bool
		passkeys int
		ended    []string
	)
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		u, err := s.users.ByID(ctx, id)
		if err != nil {
			return err
		}
		if totp, err = s.mfa.DeleteTOTP(ctx, id); err != nil {
			return err
		}
		if passkeys, err = s.passkeys.DeletePasskeys(ctx, id); err != nil {
			return err
		}
		if err := s.mfa.DeleteRecoveryCodes(ctx, id); err != nil {
			return err
		}
		if err := s.factors.setMFAEnabled(ctx, id, false, now); err != nil {
			return err
		}
		if ended, err = s.tokens.RevokeUser(ctx, id, now); err != nil {
			return err
		}
		if totp || passkeys > 0 {
			if err := s.factors.queueFactorNotice(ctx, u, domain.MailFactorRemoved, domain.FactorAll); err != nil {
				return err
			}
		}
		return s.webhooks.sessionsRevoked(ctx, id, string(domain.EndedByMFAReset))
	})
	if err != nil {
		return err
	}
	s.delivery.wake()
	s.sessionEnds.ended(ctx, ended...)
	s.events.note(ctx, domain.MFAResetEvent(actor.UserID, id, totp, passkeys))
	s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByMFAReset, ""))
	s.log.LogAttrs(ctx, slog.LevelInfo, "second factors reset", slog.String("user_id", id.String()))
	return nil
}

// requiredCode returns the code of a request, or a validation error when
// it is missing or empty. Its form is judged by spendCode.
func requiredCode(code *string) (string, error) {
	if code == nil || *code == "" {
		verr := &domain.ValidationError{}
		verr.Add(FieldCode, "must not be empty")
		return "", verr
	}
	return *code, nil
}

func hashRecoveryCodes(user domain.UserID, codes []string) []string {
	hashes := make([]string, len(codes))
	for i, c := range codes {
		hashes[i] = domain.HashRecoveryCode(user, c)
	}
	return hashes
}
