package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// outboxEntry is a stored message, its payload sealed when Secret, and
// the end of its lease while a sender holds it.
type outboxEntry struct {
	m            domain.OutboxMessage
	claimedUntil time.Time
}

// Outbox is the in-memory ports.Outbox. Like the SQL store it keeps a
// secret payload sealed by its SecretBox, with the message's id as
// associated data, and opens it when the message is claimed, so that code
// tested against it meets the same errors.
type Outbox struct {
	s   *Store
	box ports.SecretBox
}

var _ ports.Outbox = (*Outbox)(nil)

// NewOutbox returns an outbox over a store of its own, sealing with box.
func NewOutbox(box ports.SecretBox) *Outbox { return NewStore().Outbox(box) }

// Enqueue implements ports.Outbox. A message whose id is stored already is
// refused.
func (o *Outbox) Enqueue(ctx context.Context, m domain.OutboxMessage) error {
	m = copyOutboxMessage(m)
	if m.Secret {
		sealed, err := o.box.Seal(m.Payload, []byte(m.ID))
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", m.ID, err)
		}
		m.Payload = sealed
	}
	s := o.s
	defer s.lock(ctx)()
	if _, ok := s.outbox[m.ID]; ok {
		return fmt.Errorf("enqueue %s: %w", m.ID, errDuplicate)
	}
	s.outbox[m.ID] = outboxEntry{m: m}
	return nil
}

// Claim implements ports.Outbox: under the store's lock, the due messages
// whose lease (if any) has ended, oldest first. A secret payload that does
// not open fails the claim, which then leases nothing. A limit below 1
// claims nothing.
func (o *Outbox) Claim(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.OutboxMessage, error) {
	now = normTime(now)
	until := normTime(now.Add(lease))
	s := o.s
	defer s.lock(ctx)()
	var due []outboxEntry
	for _, e := range s.outbox {
		if !e.m.NextAttemptAt.After(now) && !e.claimedUntil.After(now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b outboxEntry) int {
		return cmp.Or(a.m.CreatedAt.Compare(b.m.CreatedAt), cmp.Compare(a.m.ID, b.m.ID))
	})
	due = due[:min(len(due), max(limit, 0))]
	out := make([]domain.OutboxMessage, len(due))
	for i, e := range due {
		m := copyOutboxMessage(e.m)
		if m.Secret {
			payload, err := o.box.Open(e.m.Payload, []byte(m.ID))
			if err != nil {
				return nil, fmt.Errorf("claim outbox message %s: %w", m.ID, err)
			}
			m.Payload = payload
		}
		out[i] = m
	}
	for _, e := range due {
		e.claimedUntil = until
		s.outbox[e.m.ID] = e
	}
	return out, nil
}

// Done implements ports.Outbox.
func (o *Outbox) Done(ctx context.Context, id domain.OutboxID) error {
	s := o.s
	defer s.lock(ctx)()
	delete(s.outbox, id)
	return nil
}

// Retry implements ports.Outbox: the message is due at next, its lease
// ended. A message that is gone (sent meanwhile by a node that claimed it
// after the lease ended) is left gone.
func (o *Outbox) Retry(ctx context.Context, id domain.OutboxID, next time.Time, attempts int, lastError string) error {
	s := o.s
	defer s.lock(ctx)()
	e, ok := s.outbox[id]
	if !ok {
		return nil
	}
	e.m.NextAttemptAt, e.m.Attempts, e.m.LastError = normTime(next), attempts, lastError
	e.claimedUntil = time.Time{}
	s.outbox[id] = e
	return nil
}

// Backlog implements ports.Outbox: every stored message counts, claimed
// or not.
func (o *Outbox) Backlog(ctx context.Context) (int, time.Time, error) {
	s := o.s
	defer s.lock(ctx)()
	var oldest time.Time
	for _, e := range s.outbox {
		if oldest.IsZero() || e.m.CreatedAt.Before(oldest) {
			oldest = e.m.CreatedAt
		}
	}
	return len(s.outbox), oldest, nil
}
