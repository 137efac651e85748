package gormstore

import "github.com/userd/userd/ports"

// NewStores returns every store port over db in one value, sealing
// secrets with box. endings, when set, carries ended sessions between the
// nodes of the database (NewSessionEndings), and the changes of accounts;
// nil tells no other node.
func NewStores(db *DB, box ports.SecretBox, endings *SessionEndings) ports.Stores {
	st := ports.Stores{
		Users: NewUserRepository(db), Tokens: NewRefreshTokenStore(db), Attempts: NewLoginAttemptStore(db),
		Keys: NewKeyStore(db, box), Tx: db, Outbox: NewOutbox(db, box), Links: NewLinkTokenStore(db),
		MFA: NewMFAStore(db, box), Challenges: NewMFAChallengeStore(db), Passkeys: NewPasskeyStore(db),
		OAuthClients: NewOAuthClientStore(db), AuthRequests: NewAuthRequestStore(db), Grants: NewGrantStore(db),
		ClientRevoker: NewOAuthClientRevoker(db), Audit: NewAuditLog(db), Purger: NewPurger(db), Lock: NewLock(db), Health: db,
		IdentityProviders: NewIdentityProviderStore(db, box), Identities: NewUserIdentityStore(db),
		PersonalTokens: NewPersonalTokenStore(db),
	}
	if endings != nil {
		// Not a nil *SessionEndings in the interface, which would not be nil.
		st.SessionEndings, st.AccountChanges = endings, endings
	}
	return st
}
