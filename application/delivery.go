package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Sender loop settings.
const (
	// deliveryBatch is how many messages one claim takes.
	deliveryBatch = 50
	// deliveryLease hides a claimed message from other senders while this
	// one works on it: longer than a batch of sends can take, short enough
	// that a node that died leaves its messages to others soon.
	deliveryLease = 2 * time.Minute
	// deliveryPoll is how often an idle sender looks for due messages
	// queued by other nodes or due for a retry; messages queued by this
	// node wake it at once.
	deliveryPoll = time.Second
	// sendTimeout bounds one send.
	sendTimeout = 30 * time.Second
)

// DeliveryService sends what the outbox holds: messages by mail, and the
// requests for links, which it answers (or not) by sending one. Every node
// runs one (Run); the outbox's claims keep two from taking one message.
type DeliveryService struct {
	core
	deliveryPorts
}

// deliveryPorts are what the DeliveryService uses.
type deliveryPorts struct {
	outbox ports.Outbox
	mailer ports.Mailer
	// webhookSender is nil without a receiver.
	webhookSender ports.WebhookSender
	// outboxMetrics, when set, counts what the sender does.
	outboxMetrics ports.OutboxMetrics
	// users, links, tx and mail answer the requests for links, within
	// the account's mail budget.
	users  ports.UserRepository
	links  ports.LinkTokenStore
	tx     ports.Transactor
	mail   *mailQueue
	budget domain.MailBudget
	// wakeup is rung by the use cases that queue a message.
	wakeup wakeup
	// emailSignUp mails a sign-in code to an email no account has too
	// (Config.EmailSignUp), within a budget of its own per address.
	emailSignUp bool
	// traces, when set, resume the trace each message was queued in.
	traces ports.TraceContexts
}

// Run sends what is due until ctx ends: a batch at a time, at once while
// batches come full, then when woken or every deliveryPoll.
func (d *DeliveryService) Run(ctx context.Context) {
	for {
		n, err := d.RunOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			d.log.LogAttrs(ctx, slog.LevelWarn, "outbox claim failed", slog.String("error", err.Error()))
		}
		if n == deliveryBatch {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wakeup:
		case <-time.After(deliveryPoll):
		}
	}
}

// RunOnce claims the due messages (one batch) and handles each; it
// returns how many it claimed.
func (d *DeliveryService) RunOnce(ctx context.Context) (int, error) {
	claimed := d.clock.Now()
	msgs, err := d.outbox.Claim(ctx, claimed, deliveryLease, deliveryBatch)
	if err != nil {
		return 0, fmt.Errorf("claim outbox messages: %w", err)
	}
	// A message is started only while its whole send fits in what is left
	// of the lease: past that, another node may claim it too, and two
	// senders would race on one message. A slow mail server ends the batch
	// early; the rest go back, due at once, for the next claim.
	leaseEnd := claimed.Add(deliveryLease)
	for i, m := range msgs {
		if ctx.Err() != nil || d.clock.Now().Add(sendTimeout).After(leaseEnd) {
			d.giveBack(ctx, msgs[i:]...)
			break
		}
		d.handle(ctx, m)
	}
	return len(msgs), nil
}

// giveBackTimeout bounds giving messages back at stop, when the store may
// be slow to answer.
const giveBackTimeout = 5 * time.Second

// giveBack gives messages this sender claimed but did not finish back to
// the outbox, due at once, when it stops (SIGTERM, a deployment) or its
// lease runs short: the next claim, this node's or another node's, takes
// them without waiting for the rest of the lease, which would hold them up
// to deliveryLease. Neither an attempt nor an error is recorded. A message
// that is gone (sent or given up) stays gone. A send that was cut off may
// have reached the server: it is sent again, as after a lease (at least
// once).
func (d *DeliveryService) giveBack(ctx context.Context, msgs ...domain.OutboxMessage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveBackTimeout)
	defer cancel()
	now := d.clock.Now()
	for _, m := range msgs {
		if err := d.outbox.Retry(ctx, m.ID, now, m.Attempts, m.LastError); err != nil {
			d.log.LogAttrs(ctx, slog.LevelWarn, "outbox message not given back: it waits for its lease",
				slog.String("outbox_id", string(m.ID)), slog.String("error", err.Error()))
		}
	}
}

// handle sends or answers one message and records the outcome, within
// the trace of the request that queued it (resume).
func (d *DeliveryService) handle(ctx context.Context, m domain.OutboxMessage) {
	ctx = d.resume(ctx, m)
	var err error
	switch m.Kind {
	case domain.OutboxMail:
		err = d.sendMail(ctx, m)
	case domain.OutboxMailRequest:
		err = d.answerRequest(ctx, m)
	case domain.OutboxWebhook:
		err = d.sendWebhook(ctx, m)
	default:
		// Written by a newer version of userd: leave it to a node that
		// knows it, and say so.
		d.log.LogAttrs(ctx, slog.LevelWarn, "outbox message of an unknown kind left alone",
			slog.String("kind", string(m.Kind)), slog.String("outbox_id", string(m.ID)))
		return
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		// Stopping in the middle: a request not answered goes back at
		// once (a message whose send was cut off was given back by
		// sendMail; one that is gone stays gone).
		d.giveBack(ctx, m)
	default:
		d.log.LogAttrs(ctx, slog.LevelWarn, "outbox message not handled", slog.String("kind", string(m.Kind)),
			slog.String("outbox_id", string(m.ID)), slog.String("error", err.Error()))
	}
}

// sendMail sends one message and deletes it, schedules another attempt,
// or gives it up.
func (d *DeliveryService) sendMail(ctx context.Context, m domain.OutboxMessage) error {
	var mail domain.Mail
	if err := json.Unmarshal(m.Payload, &mail); err != nil {
		// Nothing will ever send it: give it up now.
		d.giveUp(ctx, m, domain.Mail{}, "unreadable")
		return fmt.Errorf("read message: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	err := d.mailer.Send(sctx, mail)
	cancel()
	switch {
	case err == nil:
		d.count(func(mx ports.OutboxMetrics) { mx.Delivered(m.Kind) })
		return d.outbox.Done(context.WithoutCancel(ctx), m.ID)
	case errors.Is(err, domain.ErrMailRejected):
		d.giveUp(ctx, m, mail, "rejected")
		return err
	case ctx.Err() != nil:
		// Stopping: the message goes back, due at once.
		d.giveBack(ctx, m)
		return nil
	}
	now := d.clock.Now()
	next, tooOld := domain.NextAttempt(m.CreatedAt, now, m.Attempts+1)
	if tooOld {
		d.giveUp(ctx, m, mail, "expired")
		return err
	}
	d.count(func(mx ports.OutboxMetrics) { mx.Retried(m.Kind) })
	if rerr := d.outbox.Retry(context.WithoutCancel(ctx), m.ID, next, m.Attempts+1, err.Error()); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// giveUp abandons a message: deleted (its token dies with it), logged as
// an error, counted and recorded in the audit trail.
func (d *DeliveryService) giveUp(ctx context.Context, m domain.OutboxMessage, mail domain.Mail, why string) {
	ctx = context.WithoutCancel(ctx)
	if err := d.outbox.Done(ctx, m.ID); err != nil {
		d.log.LogAttrs(ctx, slog.LevelError, "outbox message given up but not deleted",
			slog.String("outbox_id", string(m.ID)), slog.String("error", err.Error()))
	}
	d.count(func(mx ports.OutboxMetrics) { mx.GivenUp(m.Kind) })
	d.log.LogAttrs(ctx, slog.LevelError, "mail given up", slog.String("outbox_id", string(m.ID)),
		slog.String("template", string(mail.Template)), slog.String("user_id", mail.User.String()),
		slog.String("reason", why), slog.Int("attempts", m.Attempts+1), slog.String("last_error", m.LastError))
	d.events.note(ctx, domain.MailGivenUpEvent(mail.User, mail.Template, why))
}

// answerRequest looks at a request for a link: for an account that may
// have one, within its mail budget, it issues the token and queues the
// message, in one transaction with the request's removal, then sends the
// message at once. The queued message is due only after deliveryLease,
// as if claimed: it waits there in case this send fails or this node
// stops first, and no other sender takes it meanwhile. Sending here
// rather than on a later claim keeps a request's message from waiting
// behind every request queued after it (claims take the oldest first).
func (d *DeliveryService) answerRequest(ctx context.Context, m domain.OutboxMessage) error {
	var req domain.MailRequest
	if err := json.Unmarshal(m.Payload, &req); err != nil {
		d.log.LogAttrs(ctx, slog.LevelError, "unreadable mail request dropped", slog.String("outbox_id", string(m.ID)))
		return d.outbox.Done(context.WithoutCancel(ctx), m.ID)
	}
	var (
		sent *domain.User
		mail domain.OutboxMessage
	)
	err := d.tx.WithinTx(ctx, func(ctx context.Context) error {
		sent = nil
		u, err := d.users.ByEmail(ctx, req.Email)
		switch {
		case errors.Is(err, domain.ErrUserNotFound) && req.Purpose == domain.LinkEmailSignIn && d.emailSignUp:
			if mail, err = d.signUpCode(ctx, req); err != nil {
				return err
			}
			if mail.ID != "" {
				sent = &domain.User{Email: req.Email}
			}
			return d.outbox.Done(ctx, m.ID)
		case errors.Is(err, domain.ErrUserNotFound):
			return d.outbox.Done(ctx, m.ID)
		case err != nil:
			return err
		}
		if !wantsLink(u, req.Purpose) {
			return d.outbox.Done(ctx, m.ID)
		}
		now := d.clock.Now()
		count, last, err := d.mail.requestedOf(ctx, u, now.Add(-domain.MailBudgetWindow))
		if err != nil {
			return err
		}
		if !d.budget.Allows(now, count, last) {
			// Beyond the budget nothing is sent and nothing changes: the
			// earlier links stay good.
			return d.outbox.Done(ctx, m.ID)
		}
		if mail, err = d.mail.replaceLink(ctx, u, req.Purpose, true, req.Lang, now.Add(deliveryLease)); err != nil {
			return err
		}
		sent = &u
		return d.outbox.Done(ctx, m.ID)
	})
	if err != nil {
		return err
	}
	d.count(func(mx ports.OutboxMetrics) { mx.Delivered(m.Kind) })
	if sent == nil {
		return nil
	}
	switch req.Purpose {
	case domain.LinkResetPassword:
		d.events.note(ctx, domain.PasswordResetRequestedEvent("", sent.ID))
	case domain.LinkVerifyEmail:
		d.events.note(ctx, domain.EmailVerificationRequestedEvent(sent.ID))
	}
	return d.sendMail(ctx, mail)
}

// signUpCode queues the sign-in code of an email no account has, within
// the budget of that address (the account's, counted by address); a
// request beyond it queues nothing (a zero message).
func (d *DeliveryService) signUpCode(ctx context.Context, req domain.MailRequest) (domain.OutboxMessage, error) {
	now := d.clock.Now()
	count, last, err := d.links.RequestedTo(ctx, req.Email, now.Add(-time.Hour))
	if err != nil {
		return domain.OutboxMessage{}, err
	}
	if !d.budget.Allows(now, count, last) {
		return domain.OutboxMessage{}, nil
	}
	return d.mail.replaceLink(ctx, domain.User{Email: req.Email}, domain.LinkEmailSignIn, true, req.Lang, now.Add(deliveryLease))
}

// count reports to the outbox metrics, when there are any.
func (d *DeliveryService) count(fn func(ports.OutboxMetrics)) {
	if d.outboxMetrics != nil {
		fn(d.outboxMetrics)
	}
}
