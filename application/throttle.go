package application

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// passwordThrottle applies the contract's per-email lock-out to every place
// that checks a password against an account: login, and the
// currentPassword of an update. Without the second, a stolen access token
// would allow unlimited guesses at the account's password.
type passwordThrottle struct {
	attempts ports.LoginAttemptStore
	clock    ports.Clock
	log      *slog.Logger
}

// admit returns a *domain.TooManyAttemptsError while the email is locked,
// and otherwise the failures counted so far (0 when they have lapsed).
func (t passwordThrottle) admit(ctx context.Context, email domain.Email) (int, error) {
	rec, err := t.attempts.Get(ctx, email)
	if err != nil {
		return 0, fmt.Errorf("login attempts: %w", err)
	}
	now := t.clock.Now()
	if !rec.LastFailureAt.IsZero() && now.Sub(rec.LastFailureAt) > domain.LoginFailureWindow {
		return 0, nil
	}
	if wait := rec.RetryAfter(now); wait > 0 {
		return 0, &domain.TooManyAttemptsError{RetryAfter: wait}
	}
	return rec.Failures, nil
}

// failed counts a wrong password and returns domain.ErrInvalidCredentials.
func (t passwordThrottle) failed(ctx context.Context, email domain.Email) error {
	rec, err := t.attempts.RecordFailure(ctx, email, t.clock.Now(), domain.LoginFailureWindow)
	if err != nil {
		return fmt.Errorf("record login failure: %w", err)
	}
	// The email is not logged: it may be a password typed into the wrong field.
	t.log.LogAttrs(ctx, slog.LevelInfo, "password check failed", slog.Int("failures", rec.Failures),
		slog.Bool("locked", rec.LockedUntil().After(t.clock.Now())))
	return domain.ErrInvalidCredentials
}

// succeeded forgets earlier failures of the email, if there were any.
func (t passwordThrottle) succeeded(ctx context.Context, email domain.Email, failures int) error {
	if failures == 0 {
		return nil
	}
	if err := t.attempts.Reset(ctx, email); err != nil {
		return fmt.Errorf("reset login attempts: %w", err)
	}
	return nil
}
