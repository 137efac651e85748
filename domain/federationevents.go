package domain

// The audit events of sign-ins through other identity providers and of
// the identities linked to accounts. The provider is named by its slug;
// neither the subject at the provider nor an email is kept in Detail
// (the subject is a user's identifier elsewhere).
const (
	// AuditIdentitySignIn: a person signed in through a provider (a
	// session opened, or the second step began).
	AuditIdentitySignIn AuditEventType = "idp.sign_in"
	// AuditIdentitySignInRefused: a sign-in through a provider was
	// refused; Detail says why (reason=…).
	AuditIdentitySignInRefused AuditEventType = "idp.sign_in_refused"
	// AuditIdentityLinked: an identity was linked to an account (a first
	// sign-in that created it, a link after the account's own sign-in,
	// the account page's "Link").
	AuditIdentityLinked AuditEventType = "identity.linked"
	// AuditIdentityUnlinked: an identity was unlinked from an account.
	AuditIdentityUnlinked AuditEventType = "identity.unlinked"
)

// Webhook event types of identities: their data carries the userId and
// the provider's slug.
const (
	WebhookIdentityLinked   = "identity.linked"
	WebhookIdentityUnlinked = "identity.unlinked"
)

// IdentitySignInEvent records that user signed in through provider.
func IdentitySignInEvent(user UserID, provider string) AuditEvent {
	return AuditEvent{Type: AuditIdentitySignIn, ActorID: user, SubjectID: user, Detail: detail("provider", provider)}
}

// IdentitySignInRefusedEvent records that a sign-in through provider was
// refused for reason; subject is the account concerned when one is known.
func IdentitySignInRefusedEvent(subject UserID, provider, reason string) AuditEvent {
	return AuditEvent{Type: AuditIdentitySignInRefused, SubjectID: subject, Detail: detail("provider", provider, "reason", reason)}
}

// IdentityLinkedEvent records that actor linked user's identity at
// provider (actor is user, or empty for an account a first sign-in
// created).
func IdentityLinkedEvent(actor, user UserID, provider string) AuditEvent {
	return AuditEvent{Type: AuditIdentityLinked, ActorID: actor, SubjectID: user, Detail: detail("provider", provider)}
}

// IdentityUnlinkedEvent records that actor unlinked user's identity at
// provider.
func IdentityUnlinkedEvent(actor, user UserID, provider string) AuditEvent {
	return AuditEvent{Type: AuditIdentityUnlinked, ActorID: actor, SubjectID: user, Detail: detail("provider", provider)}
}
