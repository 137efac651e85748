package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// auditWriteTimeout bounds one audit write. The write does not share the
// request's cancellation: a client that hangs up right after a failed login
// must not erase the trace of it.
const auditWriteTimeout = 5 * time.Second

// events is where the use cases report security events. Each event is
// counted by the SecurityMetrics and stored in the AuditLog, so that the
// dashboards and the audit trail never disagree about what happened.
// Either port may be nil.
//
// A failed audit write never fails the user's request: refusing logins
// because the audit table is unwritable would turn an audit outage into a
// full outage. It is logged as an error and counted
// (ports.SecurityMetrics.AuditWriteFailed), so that it can page someone.
type events struct {
	audit   ports.AuditLog
	metrics ports.SecurityMetrics
	clock   ports.Clock
	log     *slog.Logger

	// lastMicros makes this process's ids strictly increasing, so that two
	// events of one request (reuse detected, session revoked) keep their
	// order even within one microsecond.
	lastMicros atomic.Int64
}

func newEvents(audit ports.AuditLog, metrics ports.SecurityMetrics, clock ports.Clock, log *slog.Logger) *events {
	return &events{audit: audit, metrics: metrics, clock: clock, log: log}
}

// note records ev for a use case that goes on whatever happens to it.
func (e *events) note(ctx context.Context, ev domain.AuditEvent) {
	_ = e.record(ctx, ev)
}

// record stamps ev with an id, the time and the request's metadata, counts
// it and stores it. The returned error has been logged and counted already.
func (e *events) record(ctx context.Context, ev domain.AuditEvent) error {
	if e.metrics != nil {
		e.metrics.SecurityEvent(ev.Type)
	}
	if e.audit == nil {
		return nil
	}
	now := e.clock.Now()
	ev.Time = now
	ev.ID = domain.NewAuditID(time.UnixMicro(e.nextMicros(now.UnixMicro())))
	meta := domain.RequestMetaFrom(ctx)
	ev.RequestID, ev.ClientIP = meta.RequestID, meta.ClientIP

	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	err := e.audit.Record(wctx, ev)
	if err != nil {
		if e.metrics != nil {
			e.metrics.AuditWriteFailed()
		}
		e.log.LogAttrs(ctx, slog.LevelError, "audit write failed; the event is lost",
			slog.String("event", string(ev.Type)), slog.String("audit_id", ev.ID.String()),
			slog.String("subject_id", ev.SubjectID.String()), slog.String("error", err.Error()))
		return fmt.Errorf("record audit event: %w", err)
	}
	return nil
}

// nextMicros returns now, or one more than the last value handed out when
// now is not later.
func (e *events) nextMicros(now int64) int64 {
	for {
		last := e.lastMicros.Load()
		next := max(now, last+1)
		if e.lastMicros.CompareAndSwap(last, next) {
			return next
		}
	}
}

// refreshed counts a refresh by how it ended.
func (e *events) refreshed(o ports.RefreshOutcome) {
	if e.metrics != nil {
		e.metrics.Refresh(o)
	}
}

// refreshOutcome classifies the error of a refresh; ok is the outcome of
// a refresh that succeeded.
func refreshOutcome(ok ports.RefreshOutcome, err error) ports.RefreshOutcome {
	switch {
	case err == nil:
		return ok
	case errors.Is(err, domain.ErrRefreshTokenReused):
		return ports.RefreshReused
	case errors.Is(err, domain.ErrRefreshTokenInvalid), errors.Is(err, domain.ErrRefreshFamilyRevoked),
		errors.Is(err, domain.ErrRefreshFamilyLapsed):
		return ports.RefreshInvalid
	}
	return ports.RefreshError
}
