package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
)

// secondFactorRequired answers a right password for an account with a
// second factor: no session, but an mfaToken for the second step, and the
// methods the account can use.
//
// The password's reservation under the lock-out is given back rather than
// the count reset: the failures of the email (wrong passwords, and wrong
// codes of earlier attempts) are forgotten only when the whole login
// succeeds. Were a right password to reset them, whoever holds the
// password could try five codes, wait out the 30 s lock, and start again
// with the password: some 14,000 guesses a day at a one-in-a-million code
// that three accepted time steps make three times likelier (docs/mfa.md).
func (s *AuthService) secondFactorRequired(ctx context.Context, user domain.User, email domain.Email,
	rehash bool, password string, now time.Time) error {
	_ = s.throttle.unchecked(ctx, email, nil)
	if err := s.mayOpenSession(ctx, user); err != nil {
		return err
	}
	summary, err := s.mfa.Summary(ctx, user.ID)
	if err != nil {
		return fmt.Errorf("mfa summary: %w", err)
	}
	if !summary.Enabled() {
		// MFAEnabled is kept in the factors' transactions; should it ever
		// disagree, the factors decide, and the login is not held up.
		s.log.LogAttrs(ctx, slog.LevelWarn, "mfaEnabled set without a factor", slog.String("user_id", user.ID.String()))
		return errNoSecondFactor
	}
	if rehash {
		s.rehash(ctx, user, password)
	}
	token, hash := domain.NewMFAToken()
	err = s.challenges.CreateChallenge(ctx, domain.MFAChallenge{
		Hash: hash, UserID: user.ID, Email: email, CreatedAt: now, ExpiresAt: now.Add(domain.MFAChallengeTTL),
	})
	if err != nil {
		return fmt.Errorf("create mfa challenge: %w", err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "second factor required", slog.String("user_id", user.ID.String()))
	return &domain.MFARequiredError{Token: token, Methods: summary.Methods()}
}

// errNoSecondFactor makes Login go on as for an account without a second
// factor.
var errNoSecondFactor = errors.New("no second factor")

// MFALoginInput is the second step of a login: the mfaToken and either a
// TOTP code or a recovery code.
type MFALoginInput struct {
	MFAToken     *string
	Code         *string
	RecoveryCode *string
}

// LoginMFA finishes a login with a TOTP or recovery code. A wrong code is
// domain.ErrMFACodeRejected; it counts against the mfaToken (the fifth
// voids it) and against the email's lock-out.
func (s *AuthService) LoginMFA(ctx context.Context, in MFALoginInput) (TokenPair, error) {
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
		return TokenPair{}, err
	}
	ch, user, rec, err := s.beginSecondStep(ctx, *in.MFAToken)
	if err != nil {
		return TokenPair{}, err
	}
	if err := s.mayOpenSession(ctx, user); err != nil {
		return TokenPair{}, s.throttle.unchecked(ctx, ch.Email, err)
	}
	// The code is spent, the challenge used, the lock-out cleared and the
	// session opened in one transaction: one commit instead of four, which
	// on PostgreSQL is most of the step's time. A wrong code writes
	// nothing in it; its failure is counted after the rollback.
	var (
		pair     TokenPair
		recovery bool
	)
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if hasCode {
			recovery, err = s.checkTOTPLogin(ctx, user.ID, *in.Code)
		} else if code, ok := domain.ParseRecoveryCode(*in.RecoveryCode); ok {
			recovery, err = true, s.useRecoveryCode(ctx, user.ID, code, s.clock.Now())
		} else {
			err = domain.ErrInvalidMFACode
		}
		if err != nil {
			return err
		}
		pair, err = s.finishSecondStep(ctx, ch, user, domain.AMRPasswordOTP)
		return err
	})
	if errors.Is(err, domain.ErrInvalidMFACode) {
		return TokenPair{}, s.secondFactorFailed(ctx, ch, rec, domain.FailureWrongCode, domain.ErrMFACodeRejected)
	}
	if err != nil {
		return TokenPair{}, s.throttle.unchecked(ctx, ch.Email, err)
	}
	if recovery {
		s.recoveryCodeUsed(ctx, user.ID)
	}
	return s.loggedIn(ctx, pair, domain.AMRPasswordOTP), nil
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
	return s.spendCode(ctx, user, &f, code)
}

// beginSecondStep finds the usable challenge of an mfaToken and its user,
// and reserves one check of its email under the lock-out.
func (s *AuthService) beginSecondStep(ctx context.Context, token string) (domain.MFAChallenge, domain.User, domain.LoginAttempts, error) {
	fail := func(err error) (domain.MFAChallenge, domain.User, domain.LoginAttempts, error) {
		return domain.MFAChallenge{}, domain.User{}, domain.LoginAttempts{}, err
	}
	if !domain.WellFormedMFAToken(token) {
		return fail(domain.ErrInvalidMFAToken)
	}
	ch, err := s.challenges.Challenge(ctx, domain.HashMFAToken(token), s.clock.Now())
	if err != nil {
		return fail(err)
	}
	rec, err := s.throttle.reserve(ctx, ch.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.events.note(ctx, domain.LoginThrottledEvent("", ch.UserID, domain.CheckSecondFactor, "", tooMany.RetryAfter))
		}
		return fail(err)
	}
	user, err := s.users.ByID(ctx, ch.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return fail(s.throttle.unchecked(ctx, ch.Email, domain.ErrInvalidMFAToken))
	}
	if err != nil {
		return fail(s.throttle.unchecked(ctx, ch.Email, err))
	}
	return ch, user, rec, nil
}

// secondFactorFailed counts a wrong second factor against the challenge
// and the email, records it, and returns answer.
func (s *AuthService) secondFactorFailed(ctx context.Context, ch domain.MFAChallenge, rec domain.LoginAttempts,
	why domain.LoginFailure, answer error) error {
	if _, err := s.challenges.FailChallenge(ctx, ch.Hash, s.clock.Now()); err != nil && !errors.Is(err, domain.ErrInvalidMFAToken) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "wrong second factor not counted", slog.String("error", err.Error()))
	}
	_ = s.throttle.failed(ctx, rec)
	s.events.note(ctx, domain.LoginFailedEvent("", ch.UserID, domain.CheckSecondFactor, why))
	return answer
}

// finishSecondStep uses the challenge up, clears the email's lock-out and
// opens a session that signed in by amr. The caller has checked that the
// account may sign in (mayOpenSession), runs this in a transaction with
// the spending of the second factor, and records the sign-in (loggedIn)
// once it has committed.
func (s *AuthService) finishSecondStep(ctx context.Context, ch domain.MFAChallenge, user domain.User, amr domain.AMR) (TokenPair, error) {
	now := s.clock.Now()
	if _, err := s.challenges.UseChallenge(ctx, ch.Hash, now); err != nil {
		return TokenPair{}, err
	}
	if err := s.throttle.succeeded(ctx, ch.Email); err != nil {
		return TokenPair{}, err
	}
	return s.openSession(ctx, user, amr, now)
}

// signedInWith opens a session that signed in by amr and records it.
func (s *AuthService) signedInWith(ctx context.Context, user domain.User, amr domain.AMR, now time.Time) (TokenPair, error) {
	pair, err := s.openSession(ctx, user, amr, now)
	if err != nil {
		return TokenPair{}, err
	}
	return s.loggedIn(ctx, pair, amr), nil
}

// loggedIn records the sign-in of a session opened by amr, and returns
// its pair.
func (s *AuthService) loggedIn(ctx context.Context, pair TokenPair, amr domain.AMR) TokenPair {
	s.log.LogAttrs(ctx, slog.LevelInfo, "login succeeded", slog.String("user_id", pair.User.ID.String()))
	s.events.note(ctx, domain.LoginSucceededEvent(pair.User.ID, amr))
	return pair
}
