package ports

import "github.com/userd/userd/domain"

// SecurityMetrics counts security events for monitoring. Every event of
// the audit trail is counted here too, whether or not its write succeeds.
// The methods must be cheap and safe for concurrent use; they cannot fail.
type SecurityMetrics interface {
	// SecurityEvent counts one event of the type.
	SecurityEvent(t domain.AuditEventType)
	// Refresh counts one refresh request by outcome.
	Refresh(o RefreshOutcome)
	// AuditWriteFailed counts one event that the AuditLog failed to store.
	AuditWriteFailed()
}

// OutboxMetrics counts what the sender does with the outbox's messages,
// by kind. Cheap, safe for concurrent use, infallible.
type OutboxMetrics interface {
	// Delivered counts a message sent (or, for a request, handled).
	Delivered(kind domain.OutboxKind)
	// Retried counts a failed attempt that will be tried again.
	Retried(kind domain.OutboxKind)
	// GivenUp counts a message abandoned: refused for good, or too old.
	GivenUp(kind domain.OutboxKind)
}

// RefreshOutcome is how a refresh request ended, the label under which
// SecurityMetrics.Refresh counts it.
type RefreshOutcome string

// Refresh outcomes.
const (
	// RefreshSucceeded: the token was rotated into a new one.
	RefreshSucceeded RefreshOutcome = "success"
	// RefreshGraceRepeat: a just-used token was presented again within the
	// grace window and got the same successor.
	RefreshGraceRepeat RefreshOutcome = "grace"
	// RefreshInvalid: unknown, expired, revoked or malformed.
	RefreshInvalid RefreshOutcome = "invalid"
	// RefreshReused: reuse detected; the family is revoked.
	RefreshReused RefreshOutcome = "reuse"
	// RefreshError: the store failed.
	RefreshError RefreshOutcome = "error"
)
