package domain

import "strings"

// The audit events of OAuth clients. The client is named in Detail by its
// id (client=…), never by a secret or its hash.
const (
	// AuditOAuthClientCreated: a client was registered.
	AuditOAuthClientCreated AuditEventType = "oauth_client.created"
	// AuditOAuthClientUpdated: a client's fields changed; Detail names the
	// fields, never their values.
	AuditOAuthClientUpdated AuditEventType = "oauth_client.updated"
	// AuditOAuthClientDeleted: a client was deleted; what it was given
	// ended with it.
	AuditOAuthClientDeleted AuditEventType = "oauth_client.deleted"
	// AuditOAuthClientSecretRotated: a client was given a new secret; the
	// old one stopped working.
	AuditOAuthClientSecretRotated AuditEventType = "oauth_client.secret_rotated" //nolint:gosec // G101: the name of an event, not a credential
)

// EndedByClientDeletion is why a session of the OpenID provider (a user's
// grant of tokens to a client) ended when its client was deleted.
const EndedByClientDeletion SessionEnd = "client_deleted"

// OAuthClientCreatedEvent records that actor (empty for the operator)
// registered the client of type typ.
func OAuthClientCreatedEvent(actor UserID, client OAuthClientID, typ OAuthClientType, origin Origin) AuditEvent {
	return AuditEvent{Type: AuditOAuthClientCreated, ActorID: actor,
		Detail: detail("client", string(client), "type", string(typ), "origin", string(origin))}
}

// OAuthClientUpdatedEvent records that actor changed the fields (names,
// never values) of the client.
func OAuthClientUpdatedEvent(actor UserID, client OAuthClientID, fields []string) AuditEvent {
	return AuditEvent{Type: AuditOAuthClientUpdated, ActorID: actor,
		Detail: detail("client", string(client), "fields", strings.Join(fields, ","))}
}

// OAuthClientDeletedEvent records that actor (empty for the operator)
// deleted the client.
func OAuthClientDeletedEvent(actor UserID, client OAuthClientID, origin Origin) AuditEvent {
	return AuditEvent{Type: AuditOAuthClientDeleted, ActorID: actor,
		Detail: detail("client", string(client), "origin", string(origin))}
}

// OAuthClientSecretRotatedEvent records that actor (empty for the
// operator) gave the client a new secret.
func OAuthClientSecretRotatedEvent(actor UserID, client OAuthClientID, origin Origin) AuditEvent {
	return AuditEvent{Type: AuditOAuthClientSecretRotated, ActorID: actor,
		Detail: detail("client", string(client), "origin", string(origin))}
}
