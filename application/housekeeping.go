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

// Housekeeping defaults.
const (
	// DefaultPurgeBatch is how many rows one DELETE takes. On SQLite's one
	// writer a refresh that arrives during a batch waits for the rest of
	// it, so the batch's length is what the refreshes' p99 grows by under
	// a purge: small enough to keep that within the goal of 2×, large
	// enough for the purge to keep pace (make purgeload measures both:
	// docs/performance.md, "Housekeeping").
	DefaultPurgeBatch = 500
	// purgeLockName is the name of the lock that keeps housekeeping to
	// one node at a time.
	purgeLockName = "housekeeping"
	// minPurgePause is the least pause between two batches.
	minPurgePause = 5 * time.Millisecond
)

// PurgeCount is what housekeeping did (or would do) with one kind of
// rows.
type PurgeCount struct {
	Kind domain.PurgeKind
	// Cutoff is the time before which the kind's rows are stale.
	Cutoff time.Time
	// Rows is how many were deleted, or with a dry run, would be.
	Rows int
}

// PurgeReport is the outcome of one pass of housekeeping.
type PurgeReport struct {
	// Kinds lists the kinds purged, in domain.PurgeKinds order; a kind
	// that is kept for ever (audit events with a retention of 0) is left
	// out.
	Kinds []PurgeCount
	// Locked is true when another node held the lock: nothing was done.
	Locked bool
}

// Total returns the rows of every kind.
func (r PurgeReport) Total() int {
	n := 0
	for _, k := range r.Kinds {
		n += k.Rows
	}
	return n
}

// HousekeepingService deletes the rows nothing can use any more (see
// domain.PurgeKind), in batches, on one node at a time.
type HousekeepingService struct {
	core
	// purger is nil when there is nothing to purge with; lock nil on a
	// single node; metrics nil when not counted.
	purger  ports.Purger
	lock    ports.Lock
	metrics ports.PurgeMetrics
	// cfg holds the lifetimes that make rows stale, the batch and the
	// interval.
	cfg housekeepingConfig
}

// housekeepingConfig is what the HousekeepingService takes of Config.
type housekeepingConfig struct {
	endedSessionKeep time.Duration
	reuseGrace       time.Duration
	auditRetention   time.Duration
	purgeBatch       int
	purgeInterval    time.Duration
}

// policy is the domain's purge policy from the configuration.
func (h *HousekeepingService) policy() domain.PurgePolicy {
	return domain.PurgePolicy{
		SessionGrace:   max(h.cfg.endedSessionKeep, h.cfg.reuseGrace),
		AuditRetention: h.cfg.auditRetention,
	}
}

func (h *HousekeepingService) cutoffs() []PurgeCount {
	cutoffs := domain.PurgeCutoffs(h.clock.Now(), h.policy())
	out := make([]PurgeCount, 0, len(cutoffs))
	for _, k := range domain.PurgeKinds {
		if c, ok := cutoffs[k]; ok {
			out = append(out, PurgeCount{Kind: k, Cutoff: c})
		}
	}
	return out
}

// errNoPurger is returned by a HousekeepingService built without a
// Purger.
var errNoPurger = errors.New("housekeeping: no purger configured")

// DryRun counts, for each kind, the rows a pass would delete now,
// deleting nothing.
func (h *HousekeepingService) DryRun(ctx context.Context) (PurgeReport, error) {
	if h.purger == nil {
		return PurgeReport{}, errNoPurger
	}
	report := PurgeReport{Kinds: h.cutoffs()}
	var errs []error
	for i, k := range report.Kinds {
		n, err := h.purger.CountPurgeable(ctx, k.Kind, k.Cutoff)
		if err != nil {
			errs = append(errs, fmt.Errorf("count %s: %w", k.Kind, err))
		}
		report.Kinds[i].Rows = n
	}
	return report, errors.Join(errs...)
}

// RunOnce makes one pass: under the lock, each kind is purged a batch at
// a time until none is left, with a pause after each batch as long as
// the batch took (at least minPurgePause), so that the store's writer
// serves the requests between them. A kind that fails is reported and
// the others go on. When another node holds the lock, nothing is done
// and the report says Locked.
func (h *HousekeepingService) RunOnce(ctx context.Context) (PurgeReport, error) {
	if h.purger == nil {
		return PurgeReport{}, errNoPurger
	}
	if h.lock != nil {
		release, ok, err := h.lock.TryLock(ctx, purgeLockName)
		if err != nil {
			return PurgeReport{}, fmt.Errorf("housekeeping lock: %w", err)
		}
		if !ok {
			return PurgeReport{Locked: true}, nil
		}
		defer release()
	}
	report := PurgeReport{Kinds: h.cutoffs()}
	var errs []error
	for i, k := range report.Kinds {
		n, err := h.purgeKind(ctx, k.Kind, k.Cutoff)
		report.Kinds[i].Rows = n
		if err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", k.Kind, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	return report, errors.Join(errs...)
}

// purgeKind deletes the rows of kind stale before cutoff, a batch at a
// time, and returns how many went.
func (h *HousekeepingService) purgeKind(ctx context.Context, kind domain.PurgeKind, cutoff time.Time) (int, error) {
	return PurgeInBatches(ctx, h.purger, kind, cutoff, h.cfg.purgeBatch, func(n int) {
		if h.metrics != nil {
			h.metrics.Purged(kind, n)
		}
	})
}

// PurgeInBatches deletes the rows of kind stale before cutoff, batch rows
// at a time, until a batch comes short, and returns how many went. After
// each full batch it pauses as long as the batch took (at least
// minPurgePause), so that the store's writer spends at most about half
// its time on the purge. deleted, when set, is told each batch's count.
// It is the loop of HousekeepingService, exported for the measurements
// that drive it directly over a store.
func PurgeInBatches(ctx context.Context, p ports.Purger, kind domain.PurgeKind, cutoff time.Time, batch int,
	deleted func(n int)) (int, error) {
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	total := 0
	for {
		start := time.Now()
		n, err := p.Purge(ctx, kind, cutoff, batch)
		total += n
		if n > 0 && deleted != nil {
			deleted(n)
		}
		if err != nil || n < batch {
			return total, err
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(max(time.Since(start), minPurgePause)):
		}
	}
}

// Run makes a pass at once, then every PurgeInterval, until ctx ends; a
// PurgeInterval of 0 turns it off (Run returns at once), as does a
// service built without a Purger.
func (h *HousekeepingService) Run(ctx context.Context) {
	if h.purger == nil || h.cfg.purgeInterval <= 0 {
		return
	}
	for {
		h.runLogged(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.cfg.purgeInterval):
		}
	}
}

func (h *HousekeepingService) runLogged(ctx context.Context) {
	report, err := h.RunOnce(ctx)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "housekeeping failed", slog.String("error", err.Error()))
	}
	if report.Total() == 0 {
		return
	}
	attrs := make([]slog.Attr, 0, len(report.Kinds))
	for _, k := range report.Kinds {
		attrs = append(attrs, slog.Int(string(k.Kind), k.Rows))
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "housekeeping purged rows", attrs...)
}
