package oidcprovider

import (
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/userd/userd/domain"
)

// client is a domain.OAuthClient as the library sees it, between
// VerifyClient and the method of its grant. The library reads only its
// grant types (unauthorized_client for one it lacks) and its
// authentication method (a public client gets no client_credentials);
// the rest of op.Client serves flows that userd runs itself (the
// authorization endpoint, tokens), so it answers the neutral value.
type client struct{ c domain.OAuthClient }

var _ op.Client = client{}

// domainClient returns the client that VerifyClient authenticated.
func domainClient(c op.Client) domain.OAuthClient {
	if dc, ok := c.(client); ok {
		return dc.c
	}
	return domain.OAuthClient{}
}

func (c client) GetID() string                    { return c.c.ID.String() }
func (c client) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c client) PostLogoutRedirectURIs() []string { return c.c.PostLogoutRedirectURIs }

func (c client) ApplicationType() op.ApplicationType {
	if c.c.IsPublic() {
		return op.ApplicationTypeUserAgent
	}
	return op.ApplicationTypeWeb
}

func (c client) AuthMethod() oidc.AuthMethod {
	if c.c.IsPublic() {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (c client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c client) GrantTypes() []oidc.GrantType {
	out := make([]oidc.GrantType, len(c.c.GrantTypes))
	for i, g := range c.c.GrantTypes {
		out[i] = oidc.GrantType(g)
	}
	return out
}

func (c client) LoginURL(string) string               { return "" }
func (c client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c client) IDTokenLifetime() time.Duration       { return domain.IDTokenTTL }
func (c client) DevMode() bool                        { return false }
func (c client) IsScopeAllowed(s string) bool         { return c.c.AllowsScope(domain.OAuthScope(s)) }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return 0 }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string { //nolint:revive // var-naming: op.Client names it
	return func(s []string) []string { return s }
}

func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
