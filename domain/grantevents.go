package domain

import "strings"

// The audit events of the provider's grants: a user's consent to a
// client, given on the consent page or taken back on the account page.
const (
	// AuditConsentGiven: a user allowed a client the scopes in Detail.
	AuditConsentGiven AuditEventType = "oauth_consent.given"
	// AuditConsentRevoked: a user's grant to a client was removed; its
	// sessions ended with it.
	AuditConsentRevoked AuditEventType = "oauth_consent.revoked"
)

// Webhook event types of grants: their data carries the userId, the
// clientId and, when given, the scopes.
const (
	WebhookConsentGiven   = "oauth_consent.given"
	WebhookConsentRevoked = "oauth_consent.revoked"
)

// EndedByGrantRevocation is why a session granted to a client ended when
// the user's grant to the client was removed.
const EndedByGrantRevocation SessionEnd = "grant_revoked"

// EndedByCodeReuse is why a session granted to a client ended when the
// authorization code it was issued from was presented again (RFC 6749
// §4.1.2: the code may have been stolen).
const EndedByCodeReuse SessionEnd = "code_reuse"

// ConsentGivenEvent records that user allowed client scopes.
func ConsentGivenEvent(user UserID, client OAuthClientID, scopes []OAuthScope) AuditEvent {
	return AuditEvent{Type: AuditConsentGiven, ActorID: user, SubjectID: user,
		Detail: detail("client", string(client), "scopes", strings.Join(ScopeStrings(scopes), ","))}
}

// ConsentRevokedEvent records that actor removed user's grant to client.
func ConsentRevokedEvent(actor, user UserID, client OAuthClientID) AuditEvent {
	return AuditEvent{Type: AuditConsentRevoked, ActorID: actor, SubjectID: user, Detail: detail("client", string(client))}
}
