package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// OAuthTokens makes and checks the tokens of the OpenID provider: access
// tokens for the apps' own APIs (RFC 9068) and ID tokens for the apps.
// Their issuer is the provider's (the public URL), never the one of
// userd's own access tokens, which they cannot pass for.
type OAuthTokens interface {
	// Algorithms returns the algorithms ID tokens can be signed with,
	// the default (RS256) first; empty while the provider is off.
	Algorithms() []string
	// IssueAccessToken signs an access token that says c (c.ExpiresAt
	// and c.IssuedAt are set by the caller).
	IssueAccessToken(ctx context.Context, c domain.OAuthAccessClaims) (string, error)
	// VerifyAccessToken checks the signature, type, issuer and times of a
	// token IssueAccessToken made and returns what it says; any other
	// token is an error wrapping domain.ErrInvalidToken. It does not know
	// whether the token's session has ended: the caller checks.
	VerifyAccessToken(ctx context.Context, token string) (domain.OAuthAccessClaims, error)
	// IssueIDToken signs an ID token that says c with alg (one of
	// Algorithms), its at_hash that of accessToken (none when empty).
	IssueIDToken(ctx context.Context, c domain.IDTokenClaims, alg, accessToken string) (string, error)
	// VerifyIDTokenHint checks the signature and issuer of an ID token
	// the provider made, expired or not (an id_token_hint), and returns
	// its subject, client and session; any other is an error wrapping
	// domain.ErrInvalidToken.
	VerifyIDTokenHint(ctx context.Context, token string) (domain.IDTokenClaims, error)
	// AccessTokenTTL is how long an access token lives.
	AccessTokenTTL() time.Duration
}
