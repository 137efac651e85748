package application

import (
	"log/slog"

	"github.com/userd/userd/ports"
)

// core is what every service shares: the clock, the log, where security
// events are recorded, and the per-email lock-out of password and code
// checks. Everything else a service uses, it names in its own struct.
type core struct {
	clock    ports.Clock
	log      *slog.Logger
	events   *events
	throttle passwordThrottle
}

// wakeup tells the sender (DeliveryService.Run) that a message was queued,
// so that it looks at the outbox now rather than at its next poll. The
// use cases that queue a message wake it once their transaction has
// committed.
type wakeup chan struct{}

// wake makes an idle sender look at the outbox now; it never blocks.
func (w wakeup) wake() {
	select {
	case w <- struct{}{}:
	default:
	}
}
