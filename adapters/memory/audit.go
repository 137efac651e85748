package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuditLog is the in-memory ports.AuditLog. It has a lock of its own: no
// other map refers to the audit trail, and deleting a user keeps its events.
type AuditLog struct {
	mu sync.Mutex
	// events is kept in ascending id order, so that List seeks to a cursor.
	events []domain.AuditEvent
}

var _ ports.AuditLog = (*AuditLog)(nil)

// NewAuditLog returns an empty audit log.
func NewAuditLog() *AuditLog { return &AuditLog{} }

func compareAuditID(e domain.AuditEvent, id domain.AuditID) int {
	switch {
	case e.ID < id:
		return -1
	case e.ID > id:
		return 1
	}
	return 0
}

// Record implements ports.AuditLog.
func (l *AuditLog) Record(_ context.Context, e domain.AuditEvent) error {
	e.Time = normTime(e.Time)
	l.mu.Lock()
	defer l.mu.Unlock()
	i, found := slices.BinarySearchFunc(l.events, e.ID, compareAuditID)
	if found {
		return fmt.Errorf("record audit event: id %w", errDuplicate)
	}
	l.events = slices.Insert(l.events, i, e)
	return nil
}

// List implements ports.AuditLog. A Limit below 1 is taken as 1.
func (l *AuditLog) List(_ context.Context, q ports.AuditQuery) ([]domain.AuditEvent, error) {
	limit := max(q.Page.Limit, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	// The events are walked from the cursor in the order asked for: from
	// the first id after it, or back from the last id before it. The
	// cursor need not exist.
	i, step := 0, 1
	if q.Newest {
		i, step = len(l.events)-1, -1
	}
	if q.Page.After != "" {
		at, found := slices.BinarySearchFunc(l.events, q.Page.After, compareAuditID)
		switch {
		case q.Newest:
			i = at - 1
		case found:
			i = at + 1
		default:
			i = at
		}
	}
	// AuditEvent holds no reference types: a copy of an event is a copy.
	out := []domain.AuditEvent{}
	for ; i >= 0 && i < len(l.events) && len(out) < limit; i += step {
		if e := l.events[i]; auditMatches(e, q) {
			out = append(out, e)
		}
	}
	return out, nil
}

// auditMatches reports whether e passes the filters of q.
func auditMatches(e domain.AuditEvent, q ports.AuditQuery) bool {
	if q.UserID != "" && e.ActorID != q.UserID && e.SubjectID != q.UserID {
		return false
	}
	return q.Type == "" || e.Type == q.Type
}

// Len returns the number of stored events, for tests.
func (l *AuditLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// SecurityMetrics is an in-memory ports.SecurityMetrics: plain counters
// that tests can read. The zero value is ready to use.
type SecurityMetrics struct {
	mu            sync.Mutex
	events        map[domain.AuditEventType]int
	refreshes     map[ports.RefreshOutcome]int
	auditFailures int
}

var _ ports.SecurityMetrics = (*SecurityMetrics)(nil)

// NewSecurityMetrics returns counters at zero.
func NewSecurityMetrics() *SecurityMetrics { return &SecurityMetrics{} }

// SecurityEvent implements ports.SecurityMetrics.
func (m *SecurityMetrics) SecurityEvent(t domain.AuditEventType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = make(map[domain.AuditEventType]int)
	}
	m.events[t]++
}

// Refresh implements ports.SecurityMetrics.
func (m *SecurityMetrics) Refresh(o ports.RefreshOutcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refreshes == nil {
		m.refreshes = make(map[ports.RefreshOutcome]int)
	}
	m.refreshes[o]++
}

// AuditWriteFailed implements ports.SecurityMetrics.
func (m *SecurityMetrics) AuditWriteFailed() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.auditFailures++
}

// Events returns how many events of the type were counted.
func (m *SecurityMetrics) Events(t domain.AuditEventType) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[t]
}

// Refreshes returns how many refreshes ended with the outcome.
func (m *SecurityMetrics) Refreshes(o ports.RefreshOutcome) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refreshes[o]
}

// AuditWriteFailures returns how many audit writes failed.
func (m *SecurityMetrics) AuditWriteFailures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.auditFailures
}
