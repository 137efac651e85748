package application

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
)

// MFALoginInput is the second step of a login: the mfaToken and either a
// TOTP code or a recovery code.
type MFALoginInput struct {
	MFAToken     *string
	Code         *string
	RecoveryCode *string
}

// LoginMFA finishes a sign-in with a TOTP or recovery code
// (signInPath.secondStep). A wrong code is domain.ErrMFACodeRejected; it
// counts against the mfaToken (the fifth voids it) and against the
// email's lock-out.
func (s *AuthService) LoginMFA(ctx context.Context, in MFALoginInput) (SignInResult, error) {
	var verr domain.ValidationError
	if in.MFAToken == nil || *in.MFAToken == "" {
		verr.Add(FieldMFAToken, "must not be empty")
	}
	hasCode, hasRecovery := in.Code != nil && *in.Code != "", in.RecoveryCode != nil && *in.RecoveryCode != ""
	switch {
	case hasCode && hasRecovery:
		verr.Add(FieldCode, "send either code or recoveryCode, not both")
	case !hasCode && !hasRecovery:
		verr.Add(FieldCode, "a code or a recoveryCode is required")
	}
	if err := verr.Err(); err != nil {
		return SignInResult{}, err
	}
	// A wrong code writes nothing in the session's transaction; its
	// failure is counted after the rollback.
	var recovery bool
	return s.signIn.secondStep(ctx, *in.MFAToken, secondFactor{
		method: domain.MethodOTP, wrong: domain.FailureWrongCode,
		spend: func(ctx context.Context, user domain.User) error {
			var err error
			if hasCode {
				recovery, err = s.checkTOTPLogin(ctx, user.ID, *in.Code)
			} else if code, ok := domain.ParseRecoveryCode(*in.RecoveryCode); ok {
				recovery, err = true, s.factors.useRecoveryCode(ctx, user.ID, code, s.clock.Now())
			} else {
				err = domain.ErrInvalidMFACode
			}
			if errors.Is(err, domain.ErrInvalidMFACode) {
				return wrongFactor(domain.ErrMFACodeRejected)
			}
			return err
		},
		spent: func(ctx context.Context, user domain.User) {
			if recovery {
				s.factors.recoveryCodeUsed(ctx, user.ID)
			}
		},
	})
}

// checkTOTPLogin checks a code of the user's confirmed TOTP factor (or,
// in the recovery code's form, a recovery code) and spends it; it reports
// whether a recovery code was spent.
func (s *AuthService) checkTOTPLogin(ctx context.Context, user domain.UserID, code string) (bool, error) {
	f, err := s.mfa.TOTP(ctx, user)
	if errors.Is(err, domain.ErrMFANotEnabled) || (err == nil && !f.Confirmed()) {
		return false, domain.ErrInvalidMFACode
	}
	if err != nil {
		return false, err
	}
	return s.factors.spendCode(ctx, user, &f, code)
}
