package application_test

import (
	"context"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// TestDelivery_stop_gives_messages_back: a sender stopped in the middle
// of a batch (SIGTERM during a send) gives back the message in hand and
// those it had not come to, due at once and with no attempt counted, so
// that the next claim takes them instead of waiting out the lease.
func TestDelivery_stop_gives_messages_back(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		in := application.RegisterInput{Name: "Reader", Email: email, Password: "correct horse battery staple"}
		if _, err := e.users.Register(ctx, nil, in); err != nil {
			t.Fatal(err)
		}
	}
	stopping, stop := context.WithCancel(ctx)
	defer stop()
	// The stop comes during the first send, which it cuts off.
	e.mailer.fail = func(domain.Mail) error {
		stop()
		return context.Canceled
	}
	n, err := e.svc.Delivery.RunOnce(stopping)
	if err != nil || n != 3 {
		t.Fatalf("RunOnce = %d, %v; want the 3 verifications claimed", n, err)
	}
	if sent := e.mailer.Sent(); len(sent) != 0 {
		t.Fatalf("%d messages sent", len(sent))
	}
	msgs, err := e.store.Outbox(testBox).Claim(ctx, e.clock.Now(), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 {
		t.Fatalf("a claim right after the stop finds %d messages, want the 3 given back", len(msgs))
	}
	for _, m := range msgs {
		if m.Attempts != 0 || m.LastError != "" {
			t.Errorf("message %s: %d attempts, last error %q; a stop is no attempt", m.ID, m.Attempts, m.LastError)
		}
	}
}
