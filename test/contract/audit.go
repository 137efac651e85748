package contract

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuditLog runs the contract of ports.AuditLog against logs made by newLog.
func AuditLog(t *testing.T, newLog func(t *testing.T) ports.AuditLog) {
	t.Run("record_and_list", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		full := newAuditEvent(at(0))
		full.ActorID = domain.NewUserID(at(0))
		full.SubjectID = domain.NewUserID(at(0))
		full.ClientIP = "2001:db8::7"
		full.RequestID = "req-" + randomHex(8)
		full.Detail = "fields=email,password reason=credential_change note=é✓"
		// Only what every event has: the rest must come back empty, not
		// as NULL-turned-something.
		bare := domain.AuditEvent{ID: domain.NewAuditID(at(time.Second)), Time: at(time.Second), Type: domain.AuditKeyRotated}
		mustRecord(t, log, full)
		mustRecord(t, log, bare)

		got := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 10}})
		if len(got) != 2 {
			t.Fatalf("List returned %d events, want 2", len(got))
		}
		checkAuditEvent(t, got[0], full)
		checkAuditEvent(t, got[1], bare)
	})

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		if got := mustList(t, newLog(t), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 10}}); len(got) != 0 {
			t.Errorf("List of an empty log returned %d events", len(got))
		}
	})

	t.Run("list_order_and_limit", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		var want []domain.AuditEvent
		for i := range 12 {
			want = append(want, newAuditEvent(at(time.Duration(i)*time.Microsecond)))
		}
		shuffled := slices.Clone(want)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] }) //nolint:gosec // G404: shuffles the order the test records events in; no secret depends on it
		for _, e := range shuffled {
			mustRecord(t, log, e)
		}
		got := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 100}})
		if !slices.Equal(auditIDs(got), auditIDs(want)) {
			t.Fatalf("List order:\n got %v\nwant %v", auditIDs(got), auditIDs(want))
		}
		got = mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 5}})
		if !slices.Equal(auditIDs(got), auditIDs(want[:5])) {
			t.Errorf("List(limit 5) = %v, want %v", auditIDs(got), auditIDs(want[:5]))
		}
	})

	t.Run("list_pagination", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		var want []domain.AuditEvent
		for i := range 7 {
			e := newAuditEvent(at(time.Duration(i) * time.Millisecond))
			want = append(want, e)
			mustRecord(t, log, e)
		}
		var got []domain.AuditEvent
		var after domain.AuditID
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
			page := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{After: after, Limit: 3}})
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].ID
		}
		if !slices.Equal(auditIDs(got), auditIDs(want)) {
			t.Fatalf("pages:\n got %v\nwant %v", auditIDs(got), auditIDs(want))
		}
		// A cursor need not be a stored id: it is a position.
		between := domain.AuditID(string(want[2].ID[:16]) + "ffffffffffffffff")
		if page := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{After: between, Limit: 2}}); !slices.Equal(auditIDs(page), auditIDs(want[3:5])) {
			t.Errorf("List(after a position) = %v, want %v", auditIDs(page), auditIDs(want[3:5]))
		}
		if page := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{After: want[6].ID, Limit: 2}}); len(page) != 0 {
			t.Errorf("List(after the last) returned %d events", len(page))
		}
	})

	t.Run("duplicate_id", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		e := newAuditEvent(at(0))
		mustRecord(t, log, e)
		again := e
		again.Type = domain.AuditUserDeleted
		again.Detail = "overwritten"
		if err := log.Record(t.Context(), again); err == nil {
			t.Error("Record of a stored id succeeded")
		}
		got := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 10}})
		if len(got) != 1 {
			t.Fatalf("List returned %d events, want 1", len(got))
		}
		checkAuditEvent(t, got[0], e)
	})

	t.Run("concurrent_records", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		const n = 24
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				errs <- log.Record(t.Context(), newAuditEvent(at(time.Duration(i)*time.Microsecond)))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("Record: %v", err)
			}
		}
		got := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 100}})
		if len(got) != n || !slices.IsSorted(auditIDs(got)) {
			t.Errorf("List after %d concurrent records: %d events, sorted %v", n, len(got), slices.IsSorted(auditIDs(got)))
		}
	})

	auditFilters(t, newLog)
}

// newAuditEvent returns a failed-login event at t with a fresh id.
func newAuditEvent(t time.Time) domain.AuditEvent {
	return domain.AuditEvent{
		ID:        domain.NewAuditID(t),
		Time:      t,
		Type:      domain.AuditLoginFailed,
		ClientIP:  "192.0.2.1",
		RequestID: randomHex(16),
		Detail:    "reason=unknown_email",
	}
}

func mustRecord(t *testing.T, log ports.AuditLog, e domain.AuditEvent) {
	t.Helper()
	if err := log.Record(t.Context(), e); err != nil {
		t.Fatalf("Record %s: %v", e.ID, err)
	}
}

func mustList(t *testing.T, log ports.AuditLog, q ports.AuditQuery) []domain.AuditEvent {
	t.Helper()
	got, err := log.List(t.Context(), q)
	if err != nil {
		t.Fatalf("List(%+v): %v", q, err)
	}
	return got
}

func checkAuditEvent(t *testing.T, got, want domain.AuditEvent) {
	t.Helper()
	if got.ID != want.ID || !sameTime(got.Time, want.Time) || got.Type != want.Type || got.ActorID != want.ActorID ||
		got.SubjectID != want.SubjectID || got.ClientIP != want.ClientIP || got.RequestID != want.RequestID || got.Detail != want.Detail {
		t.Errorf("audit event mismatch:\n got %s\nwant %s", fmtAuditEvent(got), fmtAuditEvent(want))
	}
}

func fmtAuditEvent(e domain.AuditEvent) string {
	return fmt.Sprintf("{ID:%s Time:%s Type:%s Actor:%q Subject:%q IP:%q Request:%q Detail:%q}",
		e.ID, e.Time.Format(time.RFC3339Nano), e.Type, e.ActorID, e.SubjectID, e.ClientIP, e.RequestID, e.Detail)
}

func auditIDs(events []domain.AuditEvent) []domain.AuditID {
	out := make([]domain.AuditID, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}
