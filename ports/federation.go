package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// FederationRequest is one flow's half of the exchange with a provider:
// where the provider sends the browser back, and the flow's secrets.
type FederationRequest struct {
	// RedirectURI is the callback the provider was registered with:
	// USERD_PUBLIC_URL/auth/idp/{slug}/callback.
	RedirectURI string
	// State binds the callback to the browser that began the flow.
	State string
	// Nonce binds the ID token to the flow (oidc).
	Nonce string
	// CodeVerifier is the flow's PKCE verifier; the provider is sent its
	// S256 challenge.
	CodeVerifier string
}

// IdentityProviderClient speaks to the identity providers people sign in
// with (the driven side of a federated sign-in): OpenID providers by
// discovery, GitHub by OAuth 2 and its API. An implementation may keep
// what it learned of a provider (its discovery document, its keys) for a
// while, and must forget it when the provider's settings change (its
// UpdatedAt moves).
type IdentityProviderClient interface {
	// AuthCodeURL is the provider's authorization URL for the flow req:
	// the provider's client id, its scopes, the redirect URI, the state,
	// the nonce (oidc) and the S256 challenge of the verifier. An oidc
	// provider whose discovery cannot be read is an error wrapping
	// domain.FederationRefused(domain.RefusedProviderUnreachable, …).
	AuthCodeURL(ctx context.Context, p domain.IdentityProvider, req FederationRequest) (string, error)
	// Exchange redeems the callback's code with the verifier and returns
	// the identity the provider vouches for: for oidc, from the ID token
	// after every check of its signature, issuer, audience, expiry and
	// nonce, and its claims (userinfo's when the token has no email); for
	// github, the user and its primary verified email from the API. A
	// failure is a *domain.FederationRefusedError naming the check that
	// failed (domain.Refused…). EmailVerified is the provider's word as
	// it stands: the caller applies TrustEmailVerified.
	Exchange(ctx context.Context, p domain.IdentityProvider, req FederationRequest, code string) (domain.ExternalIdentity, error)
}
