package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// LoginAttemptStore counts failed password checks per normalised email,
// shared by every node of a deployment, and admits each check before it is
// made. Every method may return an error wrapping domain.ErrUnavailable
// when the store cannot serve for now.
type LoginAttemptStore interface {
	// Reserve takes one password check for email at time at, under the
	// domain's lock-out (domain.LoginAttempts.Reserve): unless the email is
	// locked, the check is counted as a failure at once and the record
	// after it is returned. It is one atomic step for every node sharing
	// the store: of any number of concurrent calls for one email, at most
	// the remaining budget are admitted. While the email is locked it
	// counts nothing and returns a *domain.TooManyAttemptsError with the
	// wait.
	Reserve(ctx context.Context, email domain.Email, at time.Time) (domain.LoginAttempts, error)
	// Release takes back one reservation whose password was never
	// compared (the hasher was busy, the request was given up, the store
	// failed), so that only checks made count: one failure fewer, the last
	// failure time unchanged. Releasing for an email without failures does
	// nothing.
	Release(ctx context.Context, email domain.Email) error
	// Reset forgets the failures of email: after a right password, a
	// used reset link, or an admin's unlock. Resetting an email without
	// failures does nothing.
	Reset(ctx context.Context, email domain.Email) error
}
