package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// RefreshTokenStore keeps refresh-token families and the hashes of their
// tokens. It never sees a token itself. Every method may also return an
// error wrapping domain.ErrUnavailable when the store cannot serve for now.
type RefreshTokenStore interface {
	// CreateFamily starts a session with its first token. A family
	// granted to a client keeps its ClientID, Scopes and AuthTime. Its LastUsedAt
	// is its CreatedAt, whatever the caller sets; its IdleTimeout is kept
	// to the microsecond, as its times are. The family's
	// AMR is stored as domain.ParseAMR makes it (an empty one is
	// domain.AMRPassword) and read back so; one ParseAMR refuses is an
	// error, and nothing is stored.
	CreateFamily(ctx context.Context, f domain.RefreshFamily, first domain.RefreshToken) error
	// Lookup returns the token with the hash and its family, or
	// domain.ErrRefreshTokenInvalid when no token has that hash.
	Lookup(ctx context.Context, hash string) (domain.RefreshToken, domain.RefreshFamily, error)
	// Rotate marks the token usedHash as used at usedAt with successor as its
	// successor, and stores successor, in one transaction, provided the token
	// is unused and its family active at usedAt (domain.RefreshFamily.Active:
	// not revoked, not past its end or its idle limit). It reports false
	// (and writes nothing) when the token was used already; it returns
	// domain.ErrRefreshFamilyRevoked when the family is revoked, and
	// domain.ErrRefreshFamilyLapsed when it is not active at usedAt
	// otherwise, each checked before the token's use. Two concurrent
	// calls for one token never both report true. A rotation sets the
	// family's LastUsedAt to usedAt.
	Rotate(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (bool, error)
	// RotateOwn is Lookup and Rotate in one step, for a session of the
	// app's own: it looks up the token usedHash and, when
	// domain.RefreshToken.RotatableOwn holds for it at usedAt, rotates it
	// as Rotate does, to successor put in the token's family and user,
	// expiring at the earlier of successor.ExpiresAt and the family's end.
	// It returns the token and its family as they were read before the
	// rotation, and whether it rotated; when it did not, it wrote nothing
	// (but for the family's LastUsedAt, which a store may set to usedAt
	// when a concurrent call rotated the token between its read and its
	// write: the token was presented), and the caller judges the token
	// from what it returned, as after a Lookup (knowing a concurrent call
	// may have rotated or revoked it since). It returns
	// domain.ErrRefreshTokenInvalid when no token has the hash. Two
	// concurrent calls (or a call and a Rotate) for one token never both
	// rotate it.
	RotateOwn(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (domain.RefreshToken, domain.RefreshFamily, bool, error)
	// RevokeFamily ends the family at the given time. Revoking an unknown or
	// revoked family is not an error.
	RevokeFamily(ctx context.Context, familyID string, at time.Time) error
	// RevokeUser ends every family of the user that is not revoked yet,
	// and returns their ids (none for a user without any), so that their
	// access tokens can be refused too.
	RevokeUser(ctx context.Context, userID domain.UserID, at time.Time) ([]string, error)
	// Sessions returns the user's families that are active at now
	// (domain.RefreshFamily.Active), newest first (domain.SortSessions);
	// none for an unknown user.
	Sessions(ctx context.Context, userID domain.UserID, now time.Time) ([]domain.RefreshFamily, error)
	// RevokeSession ends the user's family familyID at the given time. It
	// returns domain.ErrSessionNotFound when the user has no such family
	// active at that time (unknown, another user's, revoked, expired or
	// idle past its limit).
	RevokeSession(ctx context.Context, userID domain.UserID, familyID string, at time.Time) error
	// Touch records a use of the family at at that rotates nothing (a
	// browser's session that an app's sign-in went through), so that its
	// idle limit counts from then: LastUsedAt moves to at when the family
	// is active at at and was last used more than TouchInterval before.
	// An unknown, ended or lapsed family is no error, and is not moved.
	Touch(ctx context.Context, familyID string, at time.Time) error
	// Family returns the family with the id, whatever its state, or
	// domain.ErrSessionNotFound.
	Family(ctx context.Context, familyID string) (domain.RefreshFamily, error)
	// RevokeClientSessions ends every family of the user granted to the
	// client (domain.RefreshFamily.ClientID) that is not revoked yet, and
	// returns their ids (none when there is none).
	RevokeClientSessions(ctx context.Context, userID domain.UserID, client domain.OAuthClientID, at time.Time) ([]string, error)
}

// TouchInterval is how stale a family's LastUsedAt must be for Touch to
// write it: at most one write a minute a session, against an idle limit
// of half an hour and more.
const TouchInterval = time.Minute

// RefreshTokenCodec makes refresh tokens and what is stored for them. The
// contract fixes their form (a lowercase version 4 UUID) and demands that
// nothing stored lets a reader recover a live token, while a repeat within
// the grace window gets the same successor: the successor is therefore
// derived from the presented token under a server-held key that every
// node shares. Its methods cannot fail; an adapter that needs to load its
// key does so before the application serves.
type RefreshTokenCodec interface {
	// New returns a fresh random token.
	New() string
	// Successor returns the token that replaces token when it is rotated:
	// the same on every node and at every call.
	Successor(token string) string
	// Hash returns what the store keeps instead of token.
	Hash(token string) string
	// WellFormed reports whether token has the form New and Successor give,
	// so that anything else is refused before it reaches the store.
	WellFormed(token string) bool
}
