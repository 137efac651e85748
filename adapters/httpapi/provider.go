package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// providerPrefix is where the provider's endpoints live; every answer
// under it is no-store, 404 and 405 included (requestID).
const providerPrefix = "/oauth2/"

// providerRoutes are the routes of the OpenID provider (Options.Provider,
// the handler of adapters/oidcprovider, which this adapter does not
// import: cmd passes it in): its two metadata documents and its
// endpoints. /oauth2/end_session is a page, served by Options.Pages.
var providerRoutes = []struct{ method, path string }{
	{http.MethodGet, "/.well-known/openid-configuration"},
	{http.MethodGet, "/.well-known/oauth-authorization-server"},
	{http.MethodGet, "/oauth2/authorize"},
	{http.MethodPost, "/oauth2/authorize"},
	{http.MethodPost, "/oauth2/token"},
	{http.MethodGet, "/oauth2/userinfo"},
	{http.MethodPost, "/oauth2/userinfo"},
	{http.MethodPost, "/oauth2/introspect"},
	{http.MethodPost, "/oauth2/revoke"},
}

// providerRegistrationPath is the provider's dynamic registration (RFC
// 7591): open to anyone when it is on, so it takes from the per-IP
// allowance of /auth.
const providerRegistrationPath = "/oauth2/register"

// mountProvider routes exactly the provider's routes to provider, behind
// the middleware of every route: the request id, the access log (which
// writes the path without its query, where an authorization request
// carries its state and PKCE challenge), the timeout. The provider
// bounds and reads its bodies itself, as forms, and answers its own
// errors in OAuth's JSON; without it (USERD_OIDC_PROVIDER=false) none of
// these paths exists. registration routes the dynamic registration too
// (Options.ProviderRegistration).
func (h *handler) mountProvider(e *gin.Engine, provider http.Handler, registration bool) {
	serve := gin.WrapH(provider)
	for _, r := range providerRoutes {
		e.Handle(r.method, r.path, serve)
	}
	if registration {
		e.POST(providerRegistrationPath, h.limitAuthByIP, serve)
	}
}
