package gormstore

import (
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
)

// TestMigration26_queued_messages_keep_no_trace_context migrates a
// database up to step 25, queues a message there as a binary of that
// schema would, and migrates the rest: the message is claimed with no
// trace context, and one queued after keeps its own.
func TestMigration26_queued_messages_keep_no_trace_context(t *testing.T) {
	for _, b := range upgradeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := migratedUpTo(t, b, 25)
			old := domain.NewOutboxID(time.UnixMicro(1))
			if err := db.gorm.Exec(`INSERT INTO outbox_messages (id, kind, payload, secret, created_at, next_attempt_at,
				attempts, last_error) VALUES (?, 'webhook', ?, ?, 1, 1, 0, '')`, string(old), []byte(`{}`), false).Error; err != nil {
				t.Fatalf("insert at step 25: %v", err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			box, err := secretbox.New(secretbox.NewKey())
			if err != nil {
				t.Fatal(err)
			}
			o := NewOutbox(db, box)
			traced := domain.OutboxMessage{ID: domain.NewOutboxID(time.UnixMicro(2)), Kind: domain.OutboxWebhook,
				Payload: []byte(`{}`), CreatedAt: time.UnixMicro(2), NextAttemptAt: time.UnixMicro(2),
				TraceContext: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
			if err := o.Enqueue(ctx, traced); err != nil {
				t.Fatalf("Enqueue: %v", err)
			}
			got, err := o.Claim(ctx, time.UnixMicro(3), time.Minute, 10)
			if err != nil || len(got) != 2 {
				t.Fatalf("Claim = %v, %v; want both messages", got, err)
			}
			if got[0].ID != old || got[0].TraceContext != "" {
				t.Errorf("the message queued before step 26: %s with trace context %q, want %s with none", got[0].ID, got[0].TraceContext, old)
			}
			if got[1].TraceContext != traced.TraceContext {
				t.Errorf("the message queued after: trace context %q, want %q", got[1].TraceContext, traced.TraceContext)
			}
		})
	}
}
