package application

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// mailQueue queues the messages userd mails, in the transaction of the
// change that causes them, for the sender to send (DeliveryService): the
// links (verification, password reset) with their tokens, and the
// notices.
type mailQueue struct {
	outbox ports.Outbox
	links  ports.LinkTokenStore
	clock  ports.Clock
	// The links' lifetimes and base URLs (Config), and the mail budget of
	// an account.
	verifyEmailTTL   time.Duration
	verifyEmailURL   string
	resetPasswordTTL time.Duration
	resetPasswordURL string
	emailCodeTTL     time.Duration
	magicLinkURL     string
	budget           domain.MailBudget
}

// replaceLink is queueLink for a link sent on demand (an anonymous
// request, or an admin's): a new reset link first voids the account's
// earlier ones, and so does a new sign-in code, so that only the newest
// works. requested is as for sendLink.
func (q *mailQueue) replaceLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string, due time.Time) (domain.OutboxMessage, error) {
	switch purpose {
	case domain.LinkResetPassword:
		if err := q.links.Void(ctx, u.ID, purpose, q.clock.Now()); err != nil {
			return domain.OutboxMessage{}, fmt.Errorf("void reset links: %w", err)
		}
	case domain.LinkEmailSignIn:
		// By address: a sign-up's code (no account yet) is voided too.
		if err := q.links.VoidTo(ctx, u.Email, purpose, q.clock.Now()); err != nil {
			return domain.OutboxMessage{}, fmt.Errorf("void sign-in codes: %w", err)
		}
	}
	return q.queueLink(ctx, u, purpose, requested, lang, due)
}

// sendLink issues a link token of purpose for u (for a sign-up's code,
// a User with the email alone) and queues the message that
// carries it, in ctx's transaction. requested says whether someone asked
// for it (it then counts against the account's mail budget).
func (q *mailQueue) sendLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string) error {
	_, err := q.queueLink(ctx, u, purpose, requested, lang, time.Time{})
	return err
}

// queueLink is sendLink for a caller that may send the message itself:
// the message is due at due (zero: now), and returned.
func (q *mailQueue) queueLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string, due time.Time) (domain.OutboxMessage, error) {
	now := q.clock.Now()
	ttl, base, template := q.verifyEmailTTL, q.verifyEmailURL, domain.MailVerifyEmail
	switch purpose {
	case domain.LinkResetPassword:
		ttl, base, template = q.resetPasswordTTL, q.resetPasswordURL, domain.MailResetPassword
	case domain.LinkEmailSignIn:
		ttl, base, template = q.emailCodeTTL, q.magicLinkURL, domain.MailEmailSignIn
	}
	token, hash := domain.NewLinkToken()
	t := domain.LinkToken{Hash: hash, Purpose: purpose, UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(ttl), Requested: requested}
	data := map[string]string{"link": linkURL(base, token)}
	if purpose == domain.LinkEmailSignIn {
		// One token, two ways to present it: the link, or the code typed
		// where the person asked for it.
		data["code"], t.CodeHash = domain.NewEmailCode(u.Email)
	}
	if err := q.links.Issue(ctx, t); err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("issue link token: %w", err)
	}
	return q.queue(ctx, domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: template, Lang: lang,
		Data: data}, true, due)
}

// passwordChangedNotice is the notice mailed to u after its password
// changed, by its user, an admin or a reset.
func passwordChangedNotice(u domain.User, lang string) domain.Mail {
	return domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: domain.MailPasswordChanged, Lang: lang}
}

// requestedOf is how many requested messages the account u was sent
// since since, and when the last one was: its own, and the sign-up codes
// its address was sent before the account existed (email sign-up makes
// the account at the first right code, and a request queued before that
// is answered after it: without them the address's budget would start
// again at the account's creation).
func (q *mailQueue) requestedOf(ctx context.Context, u domain.User, since time.Time) (int, time.Time, error) {
	own, ownLast, err := q.links.Requested(ctx, u.ID, since)
	if err != nil {
		return 0, time.Time{}, err
	}
	before, beforeLast, err := q.links.RequestedTo(ctx, u.Email, since)
	if err != nil {
		return 0, time.Time{}, err
	}
	if beforeLast.After(ownLast) {
		ownLast = beforeLast
	}
	return own + before, ownLast, nil
}

// checkBudget refuses with a *domain.MailBudgetError when the mail
// budget of the account id allows no more messages at now.
func (q *mailQueue) checkBudget(ctx context.Context, id domain.UserID, now time.Time) error {
	count, last, err := q.links.Requested(ctx, id, now.Add(-domain.MailBudgetWindow))
	if err != nil {
		return fmt.Errorf("mail budget: %w", err)
	}
	if !q.budget.Allows(now, count, last) {
		return &domain.MailBudgetError{RetryAfter: q.budget.RetryAfter(now, count, last)}
	}
	return nil
}

// enqueue queues m in ctx's transaction; secret marks a message whose
// data holds a live token (sealed at rest, deleted once sent).
func (q *mailQueue) enqueue(ctx context.Context, m domain.Mail, secret bool) error {
	_, err := q.queue(ctx, m, secret, time.Time{})
	return err
}

// queue is enqueue with the time the message is first due (zero:
// now); it returns the message.
func (q *mailQueue) queue(ctx context.Context, m domain.Mail, secret bool, due time.Time) (domain.OutboxMessage, error) {
	payload, err := json.Marshal(m)
	if err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("queue mail: %w", err)
	}
	now := q.clock.Now()
	if due.IsZero() {
		due = now
	}
	msg := domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMail, Payload: payload,
		Secret: secret, CreatedAt: now, NextAttemptAt: due}
	if err := q.outbox.Enqueue(ctx, msg); err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("queue mail: %w", err)
	}
	return msg, nil
}

// linkURL appends the token to a link's base URL as the query parameter
// "token", keeping a query the base already has.
func linkURL(base, token string) string {
	u, err := url.Parse(base)
	if err != nil {
		// The configuration checked the URL; keep the message usable anyway.
		return base + "?token=" + url.QueryEscape(token)
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}
