package application

// STUB: the method set of the ProviderService, for the adapters to build
// against while the use cases are written; this file goes before merge.

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
)

var errProviderNotBuilt = errors.New("provider: not built yet")

type refreshRotation struct{}

// Algorithms returns the algorithms ID tokens can be signed with, RS256
// first (discovery's id_token_signing_alg_values_supported).
func (s *ProviderService) Algorithms() []string { return nil }

// Issuer returns the provider's issuer.
func (s *ProviderService) Issuer() string { return s.issuer }

// Authorize checks an authorization request and stores it; it returns the
// request's id, for the pages to continue with (Continue). An unknown
// client is domain.ErrOAuthClientNotFound and a redirect URI the client
// did not register domain.ErrRedirectURINotRegistered: the caller shows a
// page (400) and never redirects. Every other refusal is an
// *AuthorizeError, whose Location the browser is sent to.
func (s *ProviderService) Authorize(ctx context.Context, in AuthorizeInput) (string, error) {
	return "", errProviderNotBuilt
}

// Continue takes the flow requestID on for the browser, signed in
// (browser) or not (nil): to the sign-in page, the consent page, or the
// client with a code or an error. An unknown, expired or finished
// request is domain.ErrAuthRequestNotFound (a page says to start again
// from the app).
func (s *ProviderService) Continue(ctx context.Context, requestID string, browser *BrowserSession) (AuthorizeStep, error) {
	return AuthorizeStep{}, errProviderNotBuilt
}

// Consent records the user's answer on the consent page: allow gives the
// client the scopes asked (remembered as a grant) and the code; deny
// sends access_denied. The browser must still hold the session it
// consented with.
func (s *ProviderService) Consent(ctx context.Context, requestID string, browser BrowserSession, allow bool) (AuthorizeStep, error) {
	return AuthorizeStep{}, errProviderNotBuilt
}

// ClientForToken identifies the client of a request to the token,
// introspection or revocation endpoint: by its secret when one was sent
// (secretSent, by Basic or in the form), or as a public client by its id
// alone. A wrong secret, an unknown client, and a confidential one
// without its secret are domain.ErrInvalidClientCredentials.
func (s *ProviderService) ClientForToken(ctx context.Context, clientID, secret string, secretSent bool) (domain.OAuthClient, error) {
	return domain.OAuthClient{}, errProviderNotBuilt
}

// ExchangeCode answers grant_type=authorization_code. Refusals are
// *domain.OAuthError (invalid_grant, invalid_request, unauthorized_client).
func (s *ProviderService) ExchangeCode(ctx context.Context, client domain.OAuthClient, code, redirectURI, verifier string) (ProviderTokens, error) {
	return ProviderTokens{}, errProviderNotBuilt
}

// Refresh answers grant_type=refresh_token: scopes, when not empty, narrow
// the grant's. Refusals are *domain.OAuthError.
func (s *ProviderService) Refresh(ctx context.Context, client domain.OAuthClient, refreshToken string, scopes []string) (ProviderTokens, error) {
	return ProviderTokens{}, errProviderNotBuilt
}

// ClientCredentials answers grant_type=client_credentials. Refusals are
// *domain.OAuthError.
func (s *ProviderService) ClientCredentials(ctx context.Context, client domain.OAuthClient, scopes []string) (ProviderTokens, error) {
	return ProviderTokens{}, errProviderNotBuilt
}

// UserInfo answers /oauth2/userinfo for an access token of the provider;
// a bad, expired or revoked one is domain.ErrInvalidToken.
func (s *ProviderService) UserInfo(ctx context.Context, accessToken string) (UserInfo, error) {
	return UserInfo{}, errProviderNotBuilt
}

// Introspect answers /oauth2/introspect for a confidential client.
func (s *ProviderService) Introspect(ctx context.Context, client domain.OAuthClient, token string) (Introspection, error) {
	return Introspection{}, errProviderNotBuilt
}

// Revoke answers /oauth2/revoke: a refresh token ends its session, an
// access token its session too; anything else is no error.
func (s *ProviderService) Revoke(ctx context.Context, client domain.OAuthClient, token string) error {
	return errProviderNotBuilt
}

// EndSession ends the browser's session (RP-initiated logout) and says
// where to go. A post_logout_redirect_uri that is not the client's, or
// an id_token_hint that is not the provider's, is a *domain.OAuthError
// invalid_request, which the caller shows as a page.
func (s *ProviderService) EndSession(ctx context.Context, in EndSessionInput) (EndSessionResult, error) {
	return EndSessionResult{}, errProviderNotBuilt
}

// Grants lists the apps the caller gave access to.
func (s *ProviderService) Grants(ctx context.Context, actor *domain.Principal) ([]AppAccess, error) {
	return nil, errProviderNotBuilt
}

// RevokeGrant removes the caller's grant to the client clientID and ends
// its sessions: domain.ErrGrantNotFound when there is none.
func (s *ProviderService) RevokeGrant(ctx context.Context, actor *domain.Principal, clientID string) error {
	return errProviderNotBuilt
}
