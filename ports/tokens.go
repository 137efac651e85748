package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// TokenIssuer signs and verifies access tokens. Publishing the public keys
// (the JWK set) is the adapter's own business: the application never
// needs them.
type TokenIssuer interface {
	// Issue returns a signed access token for the user in session s
	// (claims sid, auth_time, amr, acr), with the claims hook's extra
	// claims (none when extra is empty). It fails only when no signing
	// key is loaded, which is a start-up error.
	Issue(ctx context.Context, u domain.User, s domain.Session, extra domain.HookClaims) (domain.AccessToken, error)
	// Verify checks the token and returns its principal, or an error
	// wrapping domain.ErrInvalidToken.
	Verify(ctx context.Context, token string) (domain.Principal, error)
}
