package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// OAuthClientStore stores the OAuth/OpenID clients. Every method may also
// return an error wrapping domain.ErrUnavailable when the store cannot
// serve for now.
type OAuthClientStore interface {
	// Create stores a new client. A client with the same id stored
	// already is an error (a caller's bug: ids are random).
	Create(ctx context.Context, c domain.OAuthClient) error
	// ByID returns the client, or domain.ErrOAuthClientNotFound.
	ByID(ctx context.Context, id domain.OAuthClientID) (domain.OAuthClient, error)
	// List returns up to page.Limit clients ordered by id ascending, those
	// after page.After when it is set.
	List(ctx context.Context, page domain.Page[domain.OAuthClientID]) ([]domain.OAuthClient, error)
	// Update loads the client, lets fn change it, and stores the result
	// atomically: no concurrent update is lost. The id and CreatedAt are
	// kept whatever fn does. It returns the stored client,
	// domain.ErrOAuthClientNotFound, or fn's error unchanged; in each
	// case but the first nothing is written. fn runs inside the store's
	// transaction or lock: it must be quick and must not call the store.
	Update(ctx context.Context, id domain.OAuthClientID, fn func(*domain.OAuthClient) error) (domain.OAuthClient, error)
	// Delete removes the client, or returns domain.ErrOAuthClientNotFound.
	Delete(ctx context.Context, id domain.OAuthClientID) error
}

// EndedSession is a session that a revocation ended: its user, and its id
// (the sid of its access tokens).
type EndedSession struct {
	UserID domain.UserID
	ID     string
}

// OAuthClientRevoker ends at once what a client was given: the grants
// users made it, its authorization codes and its refresh tokens. The
// OpenID provider's stores implement it; the clients' use cases call it
// when a client is deleted, in the transaction of the deletion (with the
// context they pass, the store joins the Transactor's transaction).
type OAuthClientRevoker interface {
	// RevokeClient ends, at the given time, everything the client was
	// given, and returns the sessions it ended (none for a client that
	// was given nothing), so that their access tokens are refused on
	// every node and their users told. It returns no domain error: an
	// unknown client has nothing to end.
	RevokeClient(ctx context.Context, client domain.OAuthClientID, at time.Time) ([]EndedSession, error)
}
