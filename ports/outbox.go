package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// Outbox keeps the messages userd must send (mail now, webhooks later)
// until they are sent: written in the same transaction as the change that
// causes them (see Transactor), claimed by the sender loops of any node,
// deleted once sent. A message whose Secret is set has its payload sealed
// at rest (ports.SecretBox, the message id as associated data). Every
// method may return an error wrapping domain.ErrUnavailable.
type Outbox interface {
	// Enqueue stores a new message, due at its NextAttemptAt.
	Enqueue(ctx context.Context, m domain.OutboxMessage) error
	// Claim returns up to limit due messages (NextAttemptAt ≤ now), oldest
	// first, and hides them from other claims until now+lease: a node that
	// dies after claiming does not lose them, another node claims them
	// again once the lease ends (at least once). Two concurrent claims, on
	// one node or several, never return the same message.
	Claim(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.OutboxMessage, error)
	// Done deletes a message that was sent (or that needs no sending).
	// Deleting a message that is gone is not an error.
	Done(ctx context.Context, id domain.OutboxID) error
	// Retry records a failed attempt: the message is due again at next,
	// with its Attempts and LastError updated.
	Retry(ctx context.Context, id domain.OutboxID, next time.Time, attempts int, lastError string) error
	// Backlog returns how many messages wait and when the oldest was made
	// (zero when none wait), for the metrics.
	Backlog(ctx context.Context) (int, time.Time, error)
}

// TraceContexts carry a trace through the outbox, when traces are on: a
// message keeps the trace context of the request that queued it
// (domain.OutboxMessage.TraceContext) and its delivery, however much
// later, resumes it, so that an operator goes from the request's trace to
// the mail or webhook it caused. Whoever wires the application passes nil
// when traces are off: nothing is then kept or resumed.
type TraceContexts interface {
	// Current returns the trace context of ctx as text to keep with a
	// message, at most domain.MaxTraceContext bytes; "" when ctx is in
	// no trace.
	Current(ctx context.Context) string
	// Resume returns ctx within the trace context tc (as Current
	// returned it), for the work that delivers the message; ctx as it is
	// when tc is empty or unreadable.
	Resume(ctx context.Context, tc string) context.Context
}
