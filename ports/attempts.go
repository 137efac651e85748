package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// LoginAttemptStore counts failed logins per normalised email, shared by
// every node of a deployment. Every method may return an error wrapping
// domain.ErrUnavailable when the store cannot serve for now.
type LoginAttemptStore interface {
	// Get returns the record for email; a zero record (Failures 0) when there
	// is none.
	Get(ctx context.Context, email domain.Email) (domain.LoginAttempts, error)
	// RecordFailure atomically adds one failure at the given time and
	// returns the updated record. A count whose last failure is older than
	// window restarts at 1, so concurrent failures are never lost.
	RecordFailure(ctx context.Context, email domain.Email, at time.Time, window time.Duration) (domain.LoginAttempts, error)
	// Reset forgets the failures of email.
	Reset(ctx context.Context, email domain.Email) error
}
