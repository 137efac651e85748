package domain

import "strings"

// The audit events of identity providers' settings. The provider is
// named in Detail by its slug, never by its secret.
const (
	// AuditIdentityProviderCreated: an admin registered a provider.
	AuditIdentityProviderCreated AuditEventType = "identity_provider.created"
	// AuditIdentityProviderUpdated: a provider's settings changed; Detail
	// names the fields, never their values.
	AuditIdentityProviderUpdated AuditEventType = "identity_provider.updated"
	// AuditIdentityProviderDeleted: a provider was deleted, and the
	// identities linked through it with it.
	AuditIdentityProviderDeleted AuditEventType = "identity_provider.deleted"
)

// IdentityProviderCreatedEvent records that actor registered the
// provider slug of kind.
func IdentityProviderCreatedEvent(actor UserID, slug string, kind IdentityProviderKind) AuditEvent {
	return AuditEvent{Type: AuditIdentityProviderCreated, ActorID: actor, Detail: detail("provider", slug, "kind", string(kind))}
}

// IdentityProviderUpdatedEvent records that actor changed the fields
// (names, never values) of the provider slug.
func IdentityProviderUpdatedEvent(actor UserID, slug string, fields []string) AuditEvent {
	return AuditEvent{Type: AuditIdentityProviderUpdated, ActorID: actor,
		Detail: detail("provider", slug, "fields", strings.Join(fields, ","))}
}

// IdentityProviderDeletedEvent records that actor deleted the provider.
func IdentityProviderDeletedEvent(actor UserID, slug string) AuditEvent {
	return AuditEvent{Type: AuditIdentityProviderDeleted, ActorID: actor, Detail: detail("provider", slug)}
}
