package ports

// Stores are the store ports, handed over as one value by the store
// adapter that fills them (memory.Store.Stores, gormstore.NewStores), so
// that whoever wires the application picks a store in one place and
// copies no port by hand. Every field is set unless its comment says it
// may be nil.
type Stores struct {
	Users    UserRepository
	Tokens   RefreshTokenStore
	Attempts LoginAttemptStore
	// Keys keeps the token adapter's signing keys and refresh-token key.
	Keys KeyStore
	// Tx runs a change and the messages it causes as one transaction.
	Tx     Transactor
	Outbox Outbox
	Links  LinkTokenStore
	// MFA, Challenges and Passkeys keep second factors, the sign-ins
	// waiting for one, and passkeys with their ceremonies.
	MFA        MFAStore
	Challenges MFAChallengeStore
	Passkeys   PasskeyStore
	// OAuthClients keeps the OAuth/OpenID clients of the provider.
	OAuthClients OAuthClientStore
	// AuthRequests and Grants keep the provider's flows and the
	// consents users gave; ClientRevoker ends what a deleted client was
	// given (grants, flows, sessions).
	AuthRequests  AuthRequestStore
	Grants        GrantStore
	ClientRevoker OAuthClientRevoker
	// IdentityProviders keeps the providers people sign in with, their
	// client secrets sealed; Identities the links of accounts to their
	// identities at them.
	IdentityProviders IdentityProviderStore
	Identities        UserIdentityStore
	// PersonalTokens keeps the users' personal access tokens, hashed.
	PersonalTokens PersonalTokenStore
	// Audit may be nil: events are then counted but not stored.
	Audit AuditLog
	// Purger deletes the rows nothing can use any more; nil leaves
	// housekeeping nothing to do. Lock keeps housekeeping to one node at a
	// time; nil when this node is the only one.
	Purger Purger
	Lock   Lock
	// SessionEndings carries the sessions one node ends to the others;
	// nil for a store of one process.
	SessionEndings SessionEndings
	// AccountChanges tells this node of the accounts other nodes changed;
	// nil for a store of one process.
	AccountChanges AccountChanges
	// Health tells whether the store can serve (readiness).
	Health HealthChecker
}
