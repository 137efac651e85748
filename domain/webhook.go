package domain

import (
	"encoding/json"
	"slices"
	"time"
)

// OutboxWebhook is an event to deliver to the webhook receiver; its
// payload is a WebhookEvent.
const OutboxWebhook OutboxKind = "webhook"

// Webhook event types of the contract. WebhookPing is sent only by
// `userd webhooks test`.
const (
	WebhookUserCreated       = "user.created"
	WebhookUserUpdated       = "user.updated"
	WebhookUserDeleted       = "user.deleted"
	WebhookUserEmailVerified = "user.email_verified"
	WebhookUserPasswordReset = "user.password_reset"
	WebhookUserDisabled      = "user.disabled"
	WebhookUserEnabled       = "user.enabled"
	WebhookUserMFAEnabled    = "user.mfa_enabled"
	WebhookUserMFADisabled   = "user.mfa_disabled"
	WebhookSessionCreated    = "session.created"
	WebhookSessionRevoked    = "session.revoked"
	WebhookPing              = "ping"
)

// Webhook event types of OAuth clients: their data carries the clientId
// (and, for an update, the names of the fields changed), never a secret.
const (
	WebhookOAuthClientCreated = "oauth_client.created"
	WebhookOAuthClientUpdated = "oauth_client.updated"
	WebhookOAuthClientDeleted = "oauth_client.deleted"
)

// WebhookEventTypes are the types USERD_WEBHOOK_EVENTS may name, in the
// contract's order.
var WebhookEventTypes = []string{
	WebhookUserCreated, WebhookUserUpdated, WebhookUserDeleted, WebhookUserEmailVerified,
	WebhookUserPasswordReset, WebhookUserDisabled, WebhookUserEnabled, WebhookUserMFAEnabled,
	WebhookUserMFADisabled, WebhookSessionCreated, WebhookSessionRevoked,
	WebhookOAuthClientCreated, WebhookOAuthClientUpdated, WebhookOAuthClientDeleted,
	WebhookConsentGiven, WebhookConsentRevoked, WebhookIdentityLinked, WebhookIdentityUnlinked,
	WebhookTokenCreated, WebhookTokenRevoked,
}

// KnownWebhookEventType reports whether t is one of WebhookEventTypes.
func KnownWebhookEventType(t string) bool { return slices.Contains(WebhookEventTypes, t) }

// WebhookEvent is one event for the receiver. ID is the webhook-id header,
// the same on every attempt, by which receivers deduplicate. Data carries
// the userId (the clientId for a client's events) and names, never a
// secret, hash or token.
type WebhookEvent struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// NewWebhookEvent returns the event of type typ at now, its id made from
// the outbox message that carries it ("msg_" and the message id, as the
// Standard Webhooks examples name them).
func NewWebhookEvent(id OutboxID, typ string, now time.Time, data map[string]any) WebhookEvent {
	if data == nil {
		data = map[string]any{}
	}
	return WebhookEvent{ID: "msg_" + string(id), Type: typ, Timestamp: now.UTC().Truncate(time.Second), Data: data}
}

// Body is what is posted: {"type","timestamp","data"}, timestamp in RFC
// 3339 UTC.
func (e WebhookEvent) Body() ([]byte, error) {
	return json.Marshal(struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}{e.Type, e.Timestamp.UTC().Format(time.RFC3339), e.Data})
}

// WebhookRetries are the waits after each failed attempt of a webhook, in
// the contract's order; after the last, attempts are hourly until the
// event is WebhookGiveUpAfter old.
var WebhookRetries = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// WebhookGiveUpAfter is how long a webhook is retried.
const WebhookGiveUpAfter = 24 * time.Hour

// NextWebhookAttempt returns when an event made at created, whose
// attempts-th delivery just failed at now, is tried again, or giveUp when
// it is too old to try any more.
func NextWebhookAttempt(created, now time.Time, attempts int) (next time.Time, giveUp bool) {
	wait := time.Hour
	if attempts >= 1 && attempts <= len(WebhookRetries) {
		wait = WebhookRetries[attempts-1]
	}
	next = now.Add(wait)
	if next.Sub(created) > WebhookGiveUpAfter {
		return time.Time{}, true
	}
	return next, false
}

// WebhookResult is the receiver's answer to one delivery: its status and
// the start of its body, for `userd webhooks test` and the logs.
type WebhookResult struct {
	Status int
	Body   []byte
}
