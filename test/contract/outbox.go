package contract

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// OutboxStorage is one empty outbox storage of an adapter.
type OutboxStorage struct {
	// Open returns another handle on the storage that seals and opens
	// secret payloads with box: on a SQL store, a handle of its own (a
	// connection pool, as another node sharing the database has).
	Open func(t *testing.T, box ports.SecretBox) ports.Outbox
	// Stored returns the payload of message id as it is stored.
	Stored func(t *testing.T, id domain.OutboxID) []byte
}

// newMessage returns a message of the kind mail made at created, due at
// once, with a payload of its own.
func newMessage(created time.Time) domain.OutboxMessage {
	id := domain.NewOutboxID(created)
	return domain.OutboxMessage{
		ID:            id,
		Kind:          domain.OutboxMail,
		Payload:       []byte(`{"To":"ada@example.com","Template":"verify_email","Data":{"message":"` + string(id) + `"}}`),
		CreatedAt:     created,
		NextAttemptAt: created,
	}
}

func checkMessage(t *testing.T, got, want domain.OutboxMessage) {
	t.Helper()
	if got.ID != want.ID || got.Kind != want.Kind || !bytes.Equal(got.Payload, want.Payload) || got.Secret != want.Secret ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.NextAttemptAt, want.NextAttemptAt) ||
		got.Attempts != want.Attempts || got.LastError != want.LastError || got.TraceContext != want.TraceContext {
		t.Errorf("outbox message mismatch:\n got {%s %s %q secret:%v created:%s next:%s attempts:%d error:%q trace:%q}\nwant {%s %s %q secret:%v created:%s next:%s attempts:%d error:%q trace:%q}",
			got.ID, got.Kind, got.Payload, got.Secret, got.CreatedAt.Format(time.RFC3339Nano), got.NextAttemptAt.Format(time.RFC3339Nano), got.Attempts, got.LastError, got.TraceContext,
			want.ID, want.Kind, want.Payload, want.Secret, want.CreatedAt.Format(time.RFC3339Nano), want.NextAttemptAt.Format(time.RFC3339Nano), want.Attempts, want.LastError, want.TraceContext)
	}
}

func messageIDs(ms []domain.OutboxMessage) []domain.OutboxID {
	out := make([]domain.OutboxID, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// Outbox runs the contract of ports.Outbox over the storages newStorage
// makes.
func Outbox(t *testing.T, newStorage func(t *testing.T) OutboxStorage) {
	newOutbox := func(t *testing.T) ports.Outbox {
		return newStorage(t).Open(t, newBox(t, secretbox.NewKey()))
	}
	enqueue := func(t *testing.T, o ports.Outbox, ms ...domain.OutboxMessage) {
		t.Helper()
		for _, m := range ms {
			if err := o.Enqueue(t.Context(), m); err != nil {
				t.Fatalf("Enqueue(%s): %v", m.ID, err)
			}
		}
	}
	claim := func(t *testing.T, o ports.Outbox, now time.Time, lease time.Duration, limit int) []domain.OutboxMessage {
		t.Helper()
		got, err := o.Claim(t.Context(), now, lease, limit)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		return got
	}
	claimIDs := func(t *testing.T, o ports.Outbox, now time.Time, lease time.Duration, limit int, want ...domain.OutboxID) {
		t.Helper()
		got := messageIDs(claim(t, o, now, lease, limit))
		if !slices.Equal(got, want) {
			t.Errorf("Claim(at %s, limit %d) = %v, want %v", now.Format(time.RFC3339Nano), limit, got, want)
		}
	}
	checkBacklog := func(t *testing.T, o ports.Outbox, n int, oldest time.Time) {
		t.Helper()
		gotN, gotOldest, err := o.Backlog(t.Context())
		if err != nil || gotN != n || !gotOldest.Equal(oldest) {
			t.Errorf("Backlog = %d, %s, %v; want %d, %s", gotN, gotOldest.Format(time.RFC3339Nano), err, n, oldest.Format(time.RFC3339Nano))
		}
	}

	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		claimIDs(t, o, at(0), time.Minute, 10)
		checkBacklog(t, o, 0, time.Time{})
	})

	t.Run("round_trip_and_order", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		// Made out of order; one is not due yet, one failed before.
		a, b, c := newMessage(at(0)), newMessage(at(time.Second)), newMessage(at(2*time.Second))
		later := newMessage(at(500 * time.Millisecond))
		later.NextAttemptAt = at(time.Hour)
		b.Kind, b.Attempts, b.LastError = domain.OutboxMailRequest, 3, "451 try again later"
		b.NextAttemptAt = at(3*time.Second + 7*time.Microsecond)
		enqueue(t, o, c, later, a, b)
		checkBacklog(t, o, 4, a.CreatedAt)
		got := claim(t, o, at(time.Minute), 2*time.Hour, 10)
		if !slices.Equal(messageIDs(got), []domain.OutboxID{a.ID, b.ID, c.ID}) {
			t.Fatalf("Claim = %v, want the due ones oldest first, %v", messageIDs(got), []domain.OutboxID{a.ID, b.ID, c.ID})
		}
		for i, want := range []domain.OutboxMessage{a, b, c} {
			checkMessage(t, got[i], want)
		}
		// Due is NextAttemptAt ≤ now.
		claimIDs(t, o, later.NextAttemptAt.Add(-time.Microsecond), time.Minute, 10)
		claimIDs(t, o, later.NextAttemptAt, time.Minute, 10, later.ID)
		// Claimed messages still wait, until done.
		checkBacklog(t, o, 4, a.CreatedAt)
	})

	t.Run("limit", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		var ms []domain.OutboxMessage
		for i := range 5 {
			ms = append(ms, newMessage(at(time.Duration(i)*time.Second)))
		}
		enqueue(t, o, ms...)
		claimIDs(t, o, at(time.Minute), time.Minute, 2, ms[0].ID, ms[1].ID)
		claimIDs(t, o, at(time.Minute), time.Minute, 0)
		claimIDs(t, o, at(time.Minute), time.Minute, 2, ms[2].ID, ms[3].ID)
		claimIDs(t, o, at(time.Minute), time.Minute, 2, ms[4].ID)
		claimIDs(t, o, at(time.Minute), time.Minute, 2)
	})

	// A claimed message is hidden until its lease ends; then it is
	// claimed again (at least once: its sender may have died).
	t.Run("lease", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		m := newMessage(at(0))
		enqueue(t, o, m)
		now := at(time.Second)
		claimIDs(t, o, now, time.Minute, 10, m.ID)
		claimIDs(t, o, now, time.Minute, 10)
		claimIDs(t, o, now.Add(time.Minute-time.Microsecond), time.Minute, 10)
		claimIDs(t, o, now.Add(time.Minute), 30*time.Second, 10, m.ID)
		claimIDs(t, o, now.Add(time.Minute+29*time.Second), time.Minute, 10)
		got := claim(t, o, now.Add(time.Minute+30*time.Second), time.Minute, 10)
		if len(got) != 1 {
			t.Fatalf("Claim after the second lease = %v, want %s", messageIDs(got), m.ID)
		}
		checkMessage(t, got[0], m)
	})

	t.Run("done", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		a, b := newMessage(at(0)), newMessage(at(time.Second))
		enqueue(t, o, a, b)
		claimIDs(t, o, at(time.Minute), time.Minute, 10, a.ID, b.ID)
		if err := o.Done(t.Context(), a.ID); err != nil {
			t.Fatalf("Done: %v", err)
		}
		checkBacklog(t, o, 1, b.CreatedAt)
		// Gone for good, lease or not.
		claimIDs(t, o, at(time.Hour), time.Minute, 10, b.ID)
		if err := o.Done(t.Context(), a.ID); err != nil {
			t.Errorf("Done(a message gone) = %v, want nil", err)
		}
		if err := o.Done(t.Context(), b.ID); err != nil {
			t.Fatalf("Done: %v", err)
		}
		checkBacklog(t, o, 0, time.Time{})
		claimIDs(t, o, at(2*time.Hour), time.Minute, 10)
	})

	t.Run("retry", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		m := newMessage(at(0))
		enqueue(t, o, m)
		claimIDs(t, o, at(time.Second), time.Hour, 10, m.ID)
		next := at(6*time.Second + 3*time.Microsecond)
		if err := o.Retry(t.Context(), m.ID, next, 1, "421 service not available"); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		// Due at next, although the lease would have lasted longer.
		claimIDs(t, o, next.Add(-time.Microsecond), time.Hour, 10)
		got := claim(t, o, next, time.Hour, 10)
		if len(got) != 1 {
			t.Fatalf("Claim at the retry = %v, want %s", messageIDs(got), m.ID)
		}
		want := m
		want.NextAttemptAt, want.Attempts, want.LastError = next, 1, "421 service not available"
		checkMessage(t, got[0], want)
		checkBacklog(t, o, 1, m.CreatedAt)
		if err := o.Retry(t.Context(), newMessage(at(0)).ID, next, 1, "x"); err != nil {
			t.Errorf("Retry(a message gone) = %v, want nil", err)
		}
	})

	// The trace context a message was queued in comes back as it went
	// in, up to domain.MaxTraceContext bytes, through a retry; none is
	// none.
	t.Run("trace_context", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		traced, longest, none := newMessage(at(0)), newMessage(at(time.Second)), newMessage(at(2*time.Second))
		traced.TraceContext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
		longest.TraceContext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 a=" +
			strings.Repeat("v", domain.MaxTraceContext-len("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 a="))
		longest.Secret = true
		enqueue(t, o, traced, longest, none)
		got := claim(t, o, at(time.Minute), time.Hour, 10)
		if len(got) != 3 {
			t.Fatalf("Claim = %v, want three messages", messageIDs(got))
		}
		for i, want := range []domain.OutboxMessage{traced, longest, none} {
			checkMessage(t, got[i], want)
		}
		next := at(2 * time.Minute)
		if err := o.Retry(t.Context(), traced.ID, next, 1, "503"); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		got = claim(t, o, next, time.Hour, 10)
		want := traced
		want.NextAttemptAt, want.Attempts, want.LastError = next, 1, "503"
		if len(got) != 1 {
			t.Fatalf("Claim after the retry = %v, want %s", messageIDs(got), traced.ID)
		}
		checkMessage(t, got[0], want)
	})

	t.Run("duplicate_id", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		m := newMessage(at(0))
		enqueue(t, o, m)
		dup := newMessage(at(time.Second))
		dup.ID = m.ID
		if err := o.Enqueue(t.Context(), dup); err == nil {
			t.Error("Enqueue(an id stored already) succeeded")
		}
		got := claim(t, o, at(time.Minute), time.Minute, 10)
		if len(got) != 1 {
			t.Fatalf("Claim = %v, want one message", messageIDs(got))
		}
		checkMessage(t, got[0], m)
	})

	t.Run("values_are_copies", func(t *testing.T) {
		t.Parallel()
		o := newOutbox(t)
		m := newMessage(at(0))
		want := m
		want.Payload = bytes.Clone(m.Payload)
		enqueue(t, o, m)
		m.Payload[0] = 'X' // the caller's slice, after Enqueue
		got := claim(t, o, at(time.Second), time.Second, 10)
		got[0].Payload[1] = 'X' // the returned slice
		got = claim(t, o, at(time.Minute), time.Second, 10)
		checkMessage(t, got[0], want)
	})

	// A secret payload comes back as it went in, is stored sealed, bound
	// to its message, and does not open without the key that sealed it.
	t.Run("secret_payload", func(t *testing.T) {
		t.Parallel()
		storage, key := newStorage(t), secretbox.NewKey()
		o := storage.Open(t, newBox(t, key))
		secret, plain := newMessage(at(0)), newMessage(at(time.Second))
		secret.Secret = true
		token, _ := domain.NewLinkToken()
		secret.Payload = []byte(`{"Data":{"link":"http://localhost:8080/account/reset-password?token=` + token + `"}}`)
		enqueue(t, o, secret, plain)
		stored := storage.Stored(t, secret.ID)
		if bytes.Contains(stored, []byte(token)) || bytes.Contains(stored, []byte("reset-password")) {
			t.Errorf("stored payload %q holds the secret payload in clear", stored)
		}
		if got := storage.Stored(t, plain.ID); !bytes.Equal(got, plain.Payload) {
			t.Errorf("stored payload of a message that is not secret = %q, want it as given, %q", got, plain.Payload)
		}
		if _, err := storage.Open(t, newBox(t, secretbox.NewKey())).Claim(t.Context(), at(time.Minute), time.Minute, 10); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Claim with another secret key = %v, want domain.ErrSecretKeyUnknown", err)
		}
		if err := storage.Open(t, newBox(t)).Enqueue(t.Context(), func() domain.OutboxMessage {
			m := newMessage(at(0))
			m.Secret = true
			return m
		}()); !errors.Is(err, domain.ErrSecretKeyMissing) {
			t.Errorf("Enqueue(secret) without a secret key = %v, want domain.ErrSecretKeyMissing", err)
		}
		got := claim(t, storage.Open(t, newBox(t, key)), at(time.Minute), time.Minute, 10)
		if len(got) != 2 {
			t.Fatalf("Claim = %v, want both messages", messageIDs(got))
		}
		checkMessage(t, got[0], secret)
		checkMessage(t, got[1], plain)
	})

	// Senders on several nodes, several each, claim at once: every
	// message is claimed exactly once while the leases last.
	t.Run("concurrent_claims", func(t *testing.T) {
		t.Parallel()
		storage, box := newStorage(t), newBox(t, secretbox.NewKey())
		nodes := []ports.Outbox{storage.Open(t, box), storage.Open(t, box)}
		const n = 200
		want := make([]domain.OutboxID, n)
		for i := range n {
			m := newMessage(at(time.Duration(i) * time.Millisecond))
			m.Secret = i%4 == 0
			enqueue(t, nodes[0], m)
			want[i] = m.ID
		}
		const senders = 8
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			counts = map[domain.OutboxID]int{}
		)
		for i := range senders {
			wg.Go(func() {
				o := nodes[i%len(nodes)]
				for {
					got, err := o.Claim(t.Context(), at(time.Minute), time.Hour, 7)
					if err != nil {
						t.Errorf("Claim: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, m := range got {
						counts[m.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		var twice []string
		for _, id := range want {
			if counts[id] != 1 {
				twice = append(twice, fmt.Sprintf("%s×%d", id, counts[id]))
			}
		}
		if len(counts) != n || len(twice) > 0 {
			t.Errorf("%d senders claimed %d distinct messages of %d; not claimed exactly once: %v", senders, len(counts), n, twice)
		}
	})
}
