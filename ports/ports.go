// Package ports declares the interfaces the application needs from the
// outside world (the driven side of the hexagon): storage, password hashing,
// token signing and time. Adapters implement them; the application depends
// on nothing else.
package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// UserListQuery selects one page of users ordered by id.
type UserListQuery struct {
	// After, when set, returns only users whose id sorts after it.
	After domain.UserID
	// Email, when set, returns only the user with exactly this normalised email.
	Email domain.Email
	// Limit is the maximum number of users returned; always at least 1.
	Limit int
}

// UserRepository stores user accounts.
type UserRepository interface {
	// Create stores a new user. It returns domain.ErrEmailTaken when another
	// user already has the email.
	Create(ctx context.Context, u domain.User) error
	// CreateMany stores new users all or nothing, in one transaction: when
	// any of them cannot be stored, none is. It returns domain.ErrEmailTaken
	// when a stored user already has one of the emails or two of users share
	// one. An empty slice stores nothing and succeeds. Callers keep batches
	// to a few hundred users: the transaction holds the write lock.
	CreateMany(ctx context.Context, users []domain.User) error
	// ByID returns the user, or domain.ErrUserNotFound.
	ByID(ctx context.Context, id domain.UserID) (domain.User, error)
	// ByEmail returns the user with the normalised email, or
	// domain.ErrUserNotFound.
	ByEmail(ctx context.Context, email domain.Email) (domain.User, error)
	// List returns up to q.Limit users ordered by id ascending.
	List(ctx context.Context, q UserListQuery) ([]domain.User, error)
	// Update loads the user, lets fn change it, and stores the result
	// atomically: no concurrent update is lost. The id and CreatedAt are
	// kept whatever fn does. It returns the stored user,
	// domain.ErrUserNotFound, domain.ErrEmailTaken, or fn's error unchanged
	// (in which case nothing is written). fn runs inside the store's
	// transaction or lock: it must be quick and must not call the store.
	Update(ctx context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error)
	// Delete removes the user and, with it, every refresh-token family of
	// the user. It returns domain.ErrUserNotFound when there is none.
	Delete(ctx context.Context, id domain.UserID) error
}

// RefreshTokenStore keeps refresh-token families and the hashes of their
// tokens. It never sees a token itself.
type RefreshTokenStore interface {
	// CreateFamily starts a session with its first token.
	CreateFamily(ctx context.Context, f domain.RefreshFamily, first domain.RefreshToken) error
	// Lookup returns the token with the hash and its family, or
	// domain.ErrRefreshTokenInvalid when no token has that hash.
	Lookup(ctx context.Context, hash string) (domain.RefreshToken, domain.RefreshFamily, error)
	// Rotate marks the token usedHash as used at usedAt with successor as its
	// successor, and stores successor, in one transaction, provided the token
	// is unused and its family not revoked. It reports false (and writes
	// nothing) when the token was used already; it returns
	// domain.ErrRefreshFamilyRevoked when the family is revoked. Two
	// concurrent calls for one token never both report true.
	Rotate(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (bool, error)
	// RevokeFamily ends the family at the given time. Revoking an unknown or
	// revoked family is not an error.
	RevokeFamily(ctx context.Context, familyID string, at time.Time) error
	// RevokeUser ends every family of the user.
	RevokeUser(ctx context.Context, userID domain.UserID, at time.Time) error
}

// LoginAttemptStore counts failed logins per normalised email, shared by
// every node of a deployment.
type LoginAttemptStore interface {
	// Get returns the record for email; a zero record (Failures 0) when there
	// is none.
	Get(ctx context.Context, email domain.Email) (domain.LoginAttempts, error)
	// RecordFailure atomically adds one failure at the given time and
	// returns the updated record. A count whose last failure is older than
	// window restarts at 1, so concurrent failures are never lost.
	RecordFailure(ctx context.Context, email domain.Email, at time.Time, window time.Duration) (domain.LoginAttempts, error)
	// Reset forgets the failures of email.
	Reset(ctx context.Context, email domain.Email) error
}

// KeyStore keeps server-held keys that every node must share.
type KeyStore interface {
	// Keys returns the keys of the purpose, oldest first (by CreatedAt, then ID).
	Keys(ctx context.Context, purpose string) ([]domain.SigningKey, error)
	// AddKey stores a new key. Adding an id that exists returns
	// domain.ErrKeyExists and changes nothing, so nodes racing to create a
	// key with a well-known id agree on one.
	AddKey(ctx context.Context, k domain.SigningKey) error
}

// HealthChecker reports whether the store can serve requests.
type HealthChecker interface {
	// Ping returns nil when the store answers; domain.ErrUnavailable otherwise.
	Ping(ctx context.Context) error
}

// PasswordHasher hashes and verifies passwords.
type PasswordHasher interface {
	// Hash returns an encoded hash of password with the configured parameters.
	// It waits for a free hashing slot while ctx allows, and returns
	// domain.ErrUnavailable when none frees up in time, or ctx's error.
	Hash(ctx context.Context, password string) (string, error)
	// Verify reports whether password matches encoded, and whether encoded
	// should be replaced by a hash with the configured parameters (another
	// algorithm or other parameters). A wrong password is (false, false, nil).
	Verify(ctx context.Context, encoded, password string) (ok bool, needsRehash bool, err error)
	// Normalize returns the form of password that Hash hashes (Unicode
	// NFKC), so that the password policy judges what is actually stored.
	Normalize(password string) string
	// CheckEncoded returns nil when encoded is a hash that Verify can check
	// passwords against (an algorithm it knows, a well-formed encoding,
	// parameters within its bounds), and otherwise an error whose message
	// says why, for a person to read. Imports use it before storing hashes
	// made elsewhere.
	CheckEncoded(encoded string) error
}

// TokenIssuer signs and verifies access tokens.
type TokenIssuer interface {
	// Issue returns a signed access token for the user.
	Issue(ctx context.Context, u domain.User) (domain.AccessToken, error)
	// Verify checks the token and returns its principal, or
	// domain.ErrInvalidToken.
	Verify(ctx context.Context, token string) (domain.Principal, error)
	// JWKSJSON returns the public verification keys as an RFC 7517 JWK Set
	// document, for GET /.well-known/jwks.json.
	JWKSJSON() []byte
}

// Clock tells the time; tests use a fixed one.
type Clock interface {
	Now() time.Time
}

// AuditQuery selects one page of the audit trail ordered by id.
type AuditQuery struct {
	// After, when set, returns only events whose id sorts after it.
	After domain.AuditID
	// Limit is the maximum number of events returned; always at least 1.
	Limit int
}

// AuditLog stores the audit trail of security events. Events are never
// changed once stored.
type AuditLog interface {
	// Record stores the event. An id that is stored already is an error
	// (and changes nothing); so is a store that cannot write, wrapping
	// domain.ErrUnavailable when it may succeed later.
	Record(ctx context.Context, e domain.AuditEvent) error
	// List returns up to q.Limit events ordered by id ascending, which is
	// the order they happened in.
	List(ctx context.Context, q AuditQuery) ([]domain.AuditEvent, error)
}

// RefreshOutcome is how a refresh request ended, for SecurityMetrics.
type RefreshOutcome string

// Refresh outcomes.
const (
	// RefreshSucceeded: the token was rotated into a new one.
	RefreshSucceeded RefreshOutcome = "success"
	// RefreshGraceRepeat: a just-used token was presented again within the
	// grace window and got the same successor.
	RefreshGraceRepeat RefreshOutcome = "grace"
	// RefreshInvalid: unknown, expired, revoked or malformed.
	RefreshInvalid RefreshOutcome = "invalid"
	// RefreshReused: reuse detected; the family is revoked.
	RefreshReused RefreshOutcome = "reuse"
	// RefreshError: the store failed.
	RefreshError RefreshOutcome = "error"
)

// SecurityMetrics counts security events for monitoring. Every event of
// the audit trail is counted here too, whether or not its write succeeds.
// The methods must be cheap and safe for concurrent use; they cannot fail.
type SecurityMetrics interface {
	// SecurityEvent counts one event of the type.
	SecurityEvent(t domain.AuditEventType)
	// Refresh counts one refresh request by outcome.
	Refresh(o RefreshOutcome)
	// AuditWriteFailed counts one event that the AuditLog failed to store.
	AuditWriteFailed()
}
