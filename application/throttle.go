package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// passwordThrottle applies the contract's per-email lock-out to every place
// that checks a password against an account: login, and the
// currentPassword of an update. Without the second, a stolen access token
// would allow unlimited guesses at the account's password.
//
// Each check is reserved before the password is looked at, in one atomic
// step of the store that counts it as a failure up front: however many
// guesses arrive at once, on however many nodes, at most the remaining
// budget is ever checked. A right password then resets the count; a check
// that could not be made (busy hasher, abandoned request) is given back.
type passwordThrottle struct {
	attempts ports.LoginAttemptStore
	clock    ports.Clock
	log      *slog.Logger
}

// releaseTimeout bounds giving back a reservation, which runs even when the
// request has been given up (that is one reason to give it back).
const releaseTimeout = 2 * time.Second

// reserve takes one password check for email. It returns a
// *domain.TooManyAttemptsError while the email is locked, and otherwise
// the record with this check counted.
func (t passwordThrottle) reserve(ctx context.Context, email domain.Email) (domain.LoginAttempts, error) {
	rec, err := t.attempts.Reserve(ctx, email, t.clock.Now())
	if err != nil {
		if _, locked := errors.AsType[*domain.TooManyAttemptsError](err); locked {
			return domain.LoginAttempts{}, err
		}
		return domain.LoginAttempts{}, fmt.Errorf("login attempts: %w", err)
	}
	return rec, nil
}

// failed reports a wrong password, counted already by reserve, and returns
// domain.ErrInvalidCredentials.
func (t passwordThrottle) failed(ctx context.Context, rec domain.LoginAttempts) error {
	// The email is not logged: it may be a password typed into the wrong field.
	t.log.LogAttrs(ctx, slog.LevelInfo, "password check failed", slog.Int("failures", rec.Failures),
		slog.Bool("locked", rec.LockedUntil().After(t.clock.Now())))
	return domain.ErrInvalidCredentials
}

// succeeded forgets the failures of the email, this check's included.
func (t passwordThrottle) succeeded(ctx context.Context, email domain.Email) error {
	return t.forget(ctx, email)
}

// forget forgets every failure of the email, which lifts its lock-out:
// after a right password, a password reset by link, or an admin's unlock.
func (t passwordThrottle) forget(ctx context.Context, email domain.Email) error {
	if err := t.attempts.Reset(ctx, email); err != nil {
		return fmt.Errorf("reset login attempts: %w", err)
	}
	return nil
}

// unchecked gives back the reservation of a check that was not made, and
// returns why, cause. A failure to give it back is logged: the answer is
// cause's either way, and the count is one too high until the next success
// or the failure window.
func (t passwordThrottle) unchecked(ctx context.Context, email domain.Email, cause error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := t.attempts.Release(rctx, email); err != nil {
		t.log.LogAttrs(ctx, slog.LevelWarn, "login attempt not given back", slog.String("error", err.Error()))
	}
	return cause
}
