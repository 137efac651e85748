package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// PersonalTokenStore keeps the users' personal access tokens: never a
// token itself, only its hash (domain.HashPersonalToken) and its prefix.
// Every method may also return an error wrapping domain.ErrUnavailable
// when the store cannot serve for now.
type PersonalTokenStore interface {
	// CreateToken stores t, unless its user holds limit live tokens at
	// t.CreatedAt already (domain.ErrTokenLimit), counted and written
	// atomically so that concurrent creations never pass limit. Its user
	// must exist (domain.ErrUserNotFound).
	CreateToken(ctx context.Context, t domain.PersonalToken, limit int) error
	// Tokens returns the user's live tokens at now (neither revoked nor
	// expired), newest first; none for an unknown user.
	Tokens(ctx context.Context, user domain.UserID, now time.Time) ([]domain.PersonalToken, error)
	// TokenByHash returns the token whose hash is hash, whatever its
	// state (the caller judges Live), with its user, in one read: what
	// every request with a token needs. domain.ErrPersonalTokenNotFound
	// when none has it.
	TokenByHash(ctx context.Context, hash string) (domain.PersonalToken, domain.User, error)
	// RevokeToken marks the user's live token id revoked at at, or
	// returns domain.ErrPersonalTokenNotFound (another user's, unknown,
	// revoked or expired at at).
	RevokeToken(ctx context.Context, user domain.UserID, id domain.PersonalTokenID, at time.Time) error
	// TouchToken records a use of the token at at: its LastUsedAt moves
	// to at when it is older than at - domain.PersonalTokenTouchInterval,
	// in one conditional write; an unknown token is no error.
	TouchToken(ctx context.Context, id domain.PersonalTokenID, at time.Time) error
}
