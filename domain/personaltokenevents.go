package domain

import "strings"

// The audit events of personal access tokens: the token is named by its
// id and prefix, never by the token.
const (
	// AuditTokenCreated: a user made a personal access token.
	AuditTokenCreated AuditEventType = "token.created"
	// AuditTokenRevoked: a personal access token was revoked, by its user
	// or an admin (the actor), or by an operator's command.
	AuditTokenRevoked AuditEventType = "token.revoked"
)

// Webhook event types of personal access tokens: their data carries the
// userId, the tokenId and, when made, its scopes.
const (
	WebhookTokenCreated = "token.created"
	WebhookTokenRevoked = "token.revoked"
)

// TokenCreatedEvent records that user made the token t.
func TokenCreatedEvent(user UserID, t PersonalToken) AuditEvent {
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = string(s)
	}
	return AuditEvent{Type: AuditTokenCreated, ActorID: user, SubjectID: user,
		Detail: detail("token", string(t.ID), "prefix", t.Prefix, "scopes", strings.Join(scopes, ","))}
}

// TokenRevokedEvent records that actor (empty for an operator) revoked
// user's token id.
func TokenRevokedEvent(actor, user UserID, id PersonalTokenID) AuditEvent {
	return AuditEvent{Type: AuditTokenRevoked, ActorID: actor, SubjectID: user, Detail: detail("token", string(id))}
}
