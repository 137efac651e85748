package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// AuthRequestStore keeps the authorization requests of the OpenID
// provider's code flow, and their codes (as hashes), in the database that
// every node shares. Every method may also return an error wrapping
// domain.ErrUnavailable when the store cannot serve for now.
type AuthRequestStore interface {
	// CreateAuthRequest stores a new request, as /oauth2/authorize
	// received it (no user, no code yet). Its client must exist.
	CreateAuthRequest(ctx context.Context, r domain.AuthRequest) error
	// AuthRequest returns the request with the id that is live at now
	// (domain.AuthRequest.Live) and has no code yet, or
	// domain.ErrAuthRequestNotFound.
	AuthRequest(ctx context.Context, id string, now time.Time) (domain.AuthRequest, error)
	// AttachCode records who signed in for the request (signed: its
	// UserID, AuthTime, AMR and BrowserSessionID) and its code's
	// CodeHash and CodeExpiresAt, provided the request is live at now
	// and has no code yet; otherwise domain.ErrAuthRequestNotFound and
	// nothing is written. A request gets one code, ever.
	AttachCode(ctx context.Context, id string, signed domain.AuthRequest, now time.Time) error
	// TakeCode marks the code with the hash used at now by the session
	// issuedSession (the sid the exchange is about to open), and returns
	// its request as it was before. Of two concurrent calls for one
	// code, one only succeeds. It returns domain.ErrAuthCodeInvalid when
	// no request has the code or it expired unused (nothing written),
	// and domain.ErrAuthCodeReused with the request (its CodeUsedAt and
	// IssuedSessionID those of the first use) when it was used already.
	TakeCode(ctx context.Context, codeHash, issuedSession string, now time.Time) (domain.AuthRequest, error)
	// DeleteAuthRequest removes the request (a denied or failed flow).
	// Deleting an unknown one is not an error.
	DeleteAuthRequest(ctx context.Context, id string) error
}

// GrantStore keeps the grants users gave clients: the scopes a client may
// have again without the consent page.
type GrantStore interface {
	// Grant returns the user's grant to the client, or
	// domain.ErrGrantNotFound.
	Grant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) (domain.Grant, error)
	// PutGrant stores g, replacing the user's grant to the client if
	// there is one (its CreatedAt is then kept). The user and the client
	// must exist.
	PutGrant(ctx context.Context, g domain.Grant) error
	// Grants returns the user's grants, oldest first; none for an
	// unknown user.
	Grants(ctx context.Context, user domain.UserID) ([]domain.Grant, error)
	// DeleteGrant removes the user's grant to the client, or returns
	// domain.ErrGrantNotFound.
	DeleteGrant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) error
}
