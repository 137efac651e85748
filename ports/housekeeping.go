package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// Purger deletes the rows that nothing can use any more, a kind at a time,
// by the rule of each domain.PurgeKind against a cutoff. Every method may
// return an error wrapping domain.ErrUnavailable; an unknown kind is an
// error.
type Purger interface {
	// Purge deletes at most limit rows of kind that are stale before
	// cutoff, in one short transaction, and returns how many it deleted:
	// fewer than limit when no more are stale. A refresh family goes with
	// its tokens, which do not count.
	Purge(ctx context.Context, kind domain.PurgeKind, cutoff time.Time, limit int) (int, error)
	// CountPurgeable returns how many rows of kind Purge would delete for
	// cutoff, were there no limit.
	CountPurgeable(ctx context.Context, kind domain.PurgeKind, cutoff time.Time) (int, error)
}

// Lock is a lock shared by every node of a store, so that a job such as
// housekeeping runs on one node at a time.
type Lock interface {
	// TryLock takes the lock called name if no one holds it, without
	// waiting: ok is false when another holder has it. release gives it
	// back (it is nil unless ok); a lock whose holder dies (its
	// connection closes) is given back by the store. A store shared by
	// one process only (SQLite, memory) may lock within the process.
	TryLock(ctx context.Context, name string) (release func(), ok bool, err error)
}

// PurgeMetrics counts what housekeeping deletes. Cheap, safe for
// concurrent use, infallible.
type PurgeMetrics interface {
	// Purged counts n rows of kind deleted.
	Purged(kind domain.PurgeKind, n int)
}
