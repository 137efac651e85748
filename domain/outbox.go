package domain

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// OutboxKind says what an outbox message is for.
type OutboxKind string

// Outbox kinds.
const (
	// OutboxMail is a message to send by mail; its payload is a Mail.
	OutboxMail OutboxKind = "mail"
	// OutboxMailRequest is a request for a link by mail (verification or
	// reset) for an email that may or may not be an account's: queued as it
	// comes, so that the answer takes the same time either way, and turned
	// into an OutboxMail (or nothing) by the sender.
	OutboxMailRequest OutboxKind = "mail_request"
)

// OutboxMessage is one message waiting in the outbox: written in the same
// transaction as the change that causes it, sent at least once by a sender
// loop, deleted once sent.
type OutboxMessage struct {
	ID   OutboxID
	Kind OutboxKind
	// Payload is the message's content, as the kind defines it (JSON).
	Payload []byte
	// Secret is true when Payload holds a live token: the store seals it
	// at rest.
	Secret    bool
	CreatedAt time.Time
	// NextAttemptAt is when the message may next be claimed.
	NextAttemptAt time.Time
	// Attempts counts the sends tried so far.
	Attempts int
	// LastError says why the last attempt failed, for operators; never a
	// secret.
	LastError string
	// TraceContext is the trace of the request that queued the message,
	// as text the tracing adapter wrote and reads back (ports.TraceContexts;
	// a W3C traceparent, then its tracestate): the delivery joins that
	// trace. Empty when traces are off or the message was queued outside
	// any trace; at most MaxTraceContext bytes.
	TraceContext string
}

// MaxTraceContext bounds OutboxMessage.TraceContext, the size of its
// column: a traceparent (55 characters in version 00), a space and a
// tracestate of up to 512 characters, what W3C Trace Context asks every
// propagator to keep (§3.3.1.5) — 568, with room for a longer
// traceparent of a later version.
const MaxTraceContext = 600

// OutboxID identifies an outbox message: 32 lowercase hex characters, 8
// bytes of big-endian Unix microseconds and 8 random bytes, so that ids
// sort by time.
type OutboxID string

// NewOutboxID returns a fresh id for a message created at t.
func NewOutboxID(t time.Time) OutboxID {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMicro())) //nolint:gosec // G115: microseconds since 1970 are positive
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[8:])
	return OutboxID(hex.EncodeToString(b[:]))
}

// Delivery policy of the outbox: a failed send is retried after
// FirstRetry, then twice as long each time up to MaxRetryInterval, and
// given up once the message is GiveUpAfter old.
const (
	FirstRetry       = 5 * time.Second
	MaxRetryInterval = time.Hour
	GiveUpAfter      = 24 * time.Hour
)

// NextAttempt returns when a message created at created, whose attempts-th
// send just failed at now, is tried again, or giveUp when it is too old to
// try any more.
func NextAttempt(created, now time.Time, attempts int) (next time.Time, giveUp bool) {
	wait := FirstRetry
	for i := 1; i < attempts && wait < MaxRetryInterval; i++ {
		wait *= 2
	}
	wait = min(wait, MaxRetryInterval)
	next = now.Add(wait)
	if next.Sub(created) > GiveUpAfter {
		return time.Time{}, true
	}
	return next, false
}

// MailTemplate names a message userd sends.
type MailTemplate string

// The messages.
const (
	// MailVerifyEmail carries a verification link (Data: "link").
	MailVerifyEmail MailTemplate = "verify_email"
	// MailResetPassword carries a reset link (Data: "link").
	MailResetPassword MailTemplate = "reset_password"
	// MailEmailSignIn carries a sign-in code and its magic link
	// (Data: "code", "link").
	MailEmailSignIn MailTemplate = "email_sign_in"
	// MailEmailChanged tells the old address of a change of email
	// (Data: "new_email").
	MailEmailChanged MailTemplate = "email_changed"
	// MailPasswordChanged tells the account that its password changed,
	// by the user, an admin or a reset.
	MailPasswordChanged MailTemplate = "password_changed"
	// MailFactorAdded tells the account that a second factor was added
	// (Data: "factor", one of the Factor… kinds).
	MailFactorAdded MailTemplate = "factor_added"
	// MailFactorRemoved tells the account that a second factor was
	// removed (Data: "factor"; FactorAll when an admin removed them all).
	MailFactorRemoved MailTemplate = "factor_removed"
)

// The kinds of second factor a notice names (Mail.Data["factor"]). Never
// the passkey's name: the requester chose it, and the notice may go to an
// address nobody has verified.
const (
	FactorPasskey = "passkey"
	FactorTOTP    = "totp"
	// FactorAll: an admin removed every factor of the account.
	FactorAll = "all"
)

// Mail is a message to one address, before it is rendered: the template,
// the language it is written in (a BCP 47 tag; the renderer falls back to
// English) and the values the template fills in. Name is the account's
// display name.
type Mail struct {
	To Email
	// User is the account the message is about (for the audit trail when
	// it is given up); empty when none is.
	User     UserID
	Name     string
	Template MailTemplate
	Lang     string
	Data     map[string]string
}

// MailRequest is the payload of an OutboxMailRequest: someone asked for a
// link of Purpose for Email, in the language Lang, at At.
type MailRequest struct {
	Purpose LinkPurpose
	Email   Email
	Lang    string
	At      time.Time
}
