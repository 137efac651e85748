package application_test

import (
	"context"
	"fmt"
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

// TestDelivery_slow_server_ends_the_batch_within_the_lease: when sends
// are so slow that the next one might outlast the lease (after which
// another node may claim the same message), the sender stops the batch
// and gives the rest back, due at once, instead of racing another node.
func TestDelivery_slow_server_ends_the_batch_within_the_lease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 6 {
		in := application.RegisterInput{Name: "Reader", Email: fmt.Sprintf("r%d@example.com", i), Password: "correct horse battery staple"}
		if _, err := e.users.Register(ctx, nil, in); err != nil {
			t.Fatal(err)
		}
	}
	// Each send takes 25 s of the 2-minute lease: the fifth would start
	// at 100 s, and with the 30 s send timeout might end past the lease's
	// end at 120 s; it is not started.
	e.mailer.fail = func(domain.Mail) error {
		e.clock.Advance(25 * time.Second)
		return nil
	}
	n, err := e.svc.Delivery.RunOnce(ctx)
	if err != nil || n != 6 {
		t.Fatalf("RunOnce = %d, %v; want the 6 verifications claimed", n, err)
	}
	if sent := len(e.mailer.Sent()); sent != 4 {
		t.Errorf("%d messages sent in one batch, want 4 (those that could finish within the lease)", sent)
	}
	msgs, err := e.store.Outbox(testBox).Claim(ctx, e.clock.Now(), time.Minute, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Errorf("a claim right after the batch finds %d messages, want the 2 given back", len(msgs))
	}
}
