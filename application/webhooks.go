package application

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// webhookQueue queues webhook events in the outbox, in the transaction of
// the change that causes them, for the sender to deliver (sendWebhook).
type webhookQueue struct {
	outbox ports.Outbox
	tx     ports.Transactor
	clock  ports.Clock
	// receiver says a receiver is configured (USERD_WEBHOOK_URL): without
	// one, nothing is queued.
	receiver bool
	// types are the event types the receiver wants; empty, all of them.
	types []string
}

// emit queues the webhook event typ about user, with more data, in the
// transaction of ctx: the event is stored with the change that causes it,
// or not at all. Without a receiver, or for a type the deployment does not
// want, it does nothing. data never holds a secret, hash or token.
func (q *webhookQueue) emit(ctx context.Context, typ string, user domain.UserID, data map[string]any) error {
	payload := map[string]any{"userId": user.String()}
	for k, v := range data {
		payload[k] = v
	}
	return q.emitData(ctx, typ, payload)
}

// emitData is emit of an event about something other than a user: its
// data is payload, as it is.
func (q *webhookQueue) emitData(ctx context.Context, typ string, payload map[string]any) error {
	if !q.wants(typ) {
		return nil
	}
	now := q.clock.Now()
	id := domain.NewOutboxID(now)
	body, err := json.Marshal(domain.NewWebhookEvent(id, typ, now, payload))
	if err != nil {
		return fmt.Errorf("queue webhook: %w", err)
	}
	msg := domain.OutboxMessage{ID: id, Kind: domain.OutboxWebhook, Payload: body, CreatedAt: now, NextAttemptAt: now}
	if err := q.outbox.Enqueue(ctx, msg); err != nil {
		return fmt.Errorf("queue webhook: %w", err)
	}
	return nil
}

// wants reports whether events of typ are sent.
func (q *webhookQueue) wants(typ string) bool {
	return q.receiver && (len(q.types) == 0 || slices.Contains(q.types, typ))
}

// inTxFor runs fn in a transaction when an event of typ is sent (the event
// is written with the change), and as it is otherwise: without a receiver
// the change stays the statements it was.
func (q *webhookQueue) inTxFor(ctx context.Context, typ string, fn func(context.Context) error) error {
	if q.wants(typ) {
		return q.tx.WithinTx(ctx, fn)
	}
	return fn(ctx)
}

// userChanges queues the events of a committed change of an account:
// user.updated with the fields' names, user.disabled or user.enabled, and
// session.revoked when every session ended.
func (q *webhookQueue) userChanges(ctx context.Context, u domain.User, changes domain.Changes) error {
	if len(changes.Fields) == 0 {
		return nil
	}
	if err := q.emit(ctx, domain.WebhookUserUpdated, u.ID, map[string]any{"changed": changes.Fields}); err != nil {
		return err
	}
	if slices.Contains(changes.Fields, domain.FieldDisabled) {
		typ := domain.WebhookUserEnabled
		if u.Disabled {
			typ = domain.WebhookUserDisabled
		}
		if err := q.emit(ctx, typ, u.ID, nil); err != nil {
			return err
		}
	}
	if slices.Contains(changes.Fields, domain.FieldEmailVerified) && u.EmailVerified {
		if err := q.emit(ctx, domain.WebhookUserEmailVerified, u.ID, nil); err != nil {
			return err
		}
	}
	if changes.EndsSessions {
		return q.sessionsRevoked(ctx, u.ID, string(domain.EndedByCredentialChange))
	}
	return nil
}

// sessionsRevoked queues session.revoked for every session of a user
// ending at once.
func (q *webhookQueue) sessionsRevoked(ctx context.Context, user domain.UserID, reason string) error {
	return q.emit(ctx, domain.WebhookSessionRevoked, user, map[string]any{"all": true, "reason": reason})
}

// sessionRevoked queues session.revoked for one session.
func (q *webhookQueue) sessionRevoked(ctx context.Context, user domain.UserID, session, reason string) error {
	return q.emit(ctx, domain.WebhookSessionRevoked, user, map[string]any{"sessionId": session, "reason": reason})
}

// sendWebhook delivers one queued event and deletes it, schedules another
// attempt on the contract's schedule (1 s, 5 s, 30 s, 2 min, 10 min, then
// hourly), or gives it up after a day.
func (d *DeliveryService) sendWebhook(ctx context.Context, m domain.OutboxMessage) error {
	var e domain.WebhookEvent
	if err := json.Unmarshal(m.Payload, &e); err != nil {
		d.giveUpWebhook(ctx, m, "", "unreadable")
		return fmt.Errorf("read webhook: %w", err)
	}
	if d.webhookSender == nil {
		// Queued while a receiver was set; none is now.
		d.giveUpWebhook(ctx, m, e.Type, "no receiver")
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	_, err := d.webhookSender.Send(sctx, e)
	cancel()
	switch {
	case err == nil:
		d.count(func(mx ports.OutboxMetrics) { mx.Delivered(m.Kind) })
		return d.outbox.Done(context.WithoutCancel(ctx), m.ID)
	case ctx.Err() != nil:
		d.giveBack(ctx, m)
		return nil
	}
	next, tooOld := domain.NextWebhookAttempt(m.CreatedAt, d.clock.Now(), m.Attempts+1)
	if tooOld {
		d.giveUpWebhook(ctx, m, e.Type, "expired")
		return err
	}
	d.count(func(mx ports.OutboxMetrics) { mx.Retried(m.Kind) })
	if rerr := d.outbox.Retry(context.WithoutCancel(ctx), m.ID, next, m.Attempts+1, err.Error()); rerr != nil {
		return fmt.Errorf("%w; %w", err, rerr)
	}
	return err
}

// giveUpWebhook abandons an event: deleted, logged as an error, counted.
func (d *DeliveryService) giveUpWebhook(ctx context.Context, m domain.OutboxMessage, typ, why string) {
	ctx = context.WithoutCancel(ctx)
	if err := d.outbox.Done(ctx, m.ID); err != nil {
		d.log.LogAttrs(ctx, slog.LevelError, "webhook given up but not deleted",
			slog.String("outbox_id", string(m.ID)), slog.String("error", err.Error()))
	}
	d.count(func(mx ports.OutboxMetrics) { mx.GivenUp(m.Kind) })
	d.log.LogAttrs(ctx, slog.LevelError, "webhook given up", slog.String("outbox_id", string(m.ID)),
		slog.String("type", typ), slog.String("reason", why), slog.Int("attempts", m.Attempts+1),
		slog.String("last_error", m.LastError))
}
