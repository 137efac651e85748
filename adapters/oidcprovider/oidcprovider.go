// Package oidcprovider is the HTTP adapter of userd's OpenID provider
// (contract-identity.md, section 1): discovery, /oauth2/authorize, the
// token, userinfo, introspection and revocation endpoints. The endpoints
// that answer JSON are zitadel's op.Server (server.go) behind a guard
// that holds the contract's rules on every answer (guard.go); the
// authorization endpoint and the RFC 8414 metadata are served here
// (authorize.go, metadata.go), for the reasons docs/decisions.md gives.
//
// The adapter calls the application through Provider, which
// *application.ProviderService implements; httpapi mounts the handler
// without importing this package, and cmd wires the two.
package oidcprovider

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The provider's paths, under the issuer.
const (
	DiscoveryPath     = "/.well-known/openid-configuration"
	MetadataPath      = "/.well-known/oauth-authorization-server"
	AuthorizePath     = "/oauth2/authorize"
	TokenPath         = "/oauth2/token" //nolint:gosec // G101: a path, not a credential
	UserInfoPath      = "/oauth2/userinfo"
	IntrospectionPath = "/oauth2/introspect"
	RevocationPath    = "/oauth2/revoke"
	// EndSessionPath and JWKSPath are served elsewhere (the pages and the
	// API adapter); the metadata names them.
	EndSessionPath = "/oauth2/end_session"
	JWKSPath       = "/.well-known/jwks.json"
)

// MaxBodyBytes bounds the body of every request to the provider: a form
// of a few parameters, whose longest value is a token.
const MaxBodyBytes = 64 << 10

// Provider is what the adapter asks of the application: the methods of
// *application.ProviderService it calls (their errors are documented
// there).
type Provider interface {
	Algorithms() []string
	Authorize(ctx context.Context, in application.AuthorizeInput) (string, error)
	ClientForToken(ctx context.Context, clientID, secret string, secretSent bool) (domain.OAuthClient, error)
	ExchangeCode(ctx context.Context, client domain.OAuthClient, code, redirectURI, verifier string) (application.ProviderTokens, error)
	Refresh(ctx context.Context, client domain.OAuthClient, refreshToken string, scopes []string) (application.ProviderTokens, error)
	ClientCredentials(ctx context.Context, client domain.OAuthClient, scopes []string) (application.ProviderTokens, error)
	UserInfo(ctx context.Context, accessToken string) (application.UserInfo, error)
	Introspect(ctx context.Context, client domain.OAuthClient, token string) (application.Introspection, error)
	Revoke(ctx context.Context, client domain.OAuthClient, token string) error
}

var _ Provider = (*application.ProviderService)(nil)

// ErrorPage shows a person an error of /oauth2/authorize that must not go
// back to the client (an unknown client, a redirect URI it did not
// register, a request that cannot be read): the pages adapter implements
// it, in its own words and markup.
type ErrorPage interface {
	ServeProviderError(w http.ResponseWriter, r *http.Request, status int, message string)
}

// Options configure the adapter.
type Options struct {
	// Issuer is the provider's issuer, USERD_PUBLIC_URL without a
	// trailing slash; every URL of the metadata starts with it.
	Issuer string
	// ContinuePath is where an accepted authorization request goes on,
	// with ?request=<id>: the pages' step of the flow.
	ContinuePath string
	// ErrorPage shows the errors of /oauth2/authorize that are not
	// redirected; nil shows a plain-text page.
	ErrorPage ErrorPage
	// Logger receives unexpected errors; nil discards them.
	Logger *slog.Logger
	// Registrar, when set, opens dynamic registration at
	// RegistrationPath (USERD_OIDC_DYNAMIC_REGISTRATION) and names it in
	// the metadata; nil leaves the path 404.
	Registrar Registrar
}

// New returns the provider's handler over p. It answers exactly the
// paths above (with their methods); anything else is a 404.
func New(p Provider, opts Options) http.Handler {
	opts.Issuer = strings.TrimRight(opts.Issuer, "/")
	if opts.ErrorPage == nil {
		opts.ErrorPage = plainErrorPage{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{p: p, opts: opts}
	// The library routes the JSON endpoints and Discovery; authorize and
	// RFC 8414's path are served here (authorize.go, metadata.go). No CORS
	// of the library's, which admits every origin with credentials
	// (docs/decisions.md).
	ops := op.RegisterServer(s, op.Endpoints{
		Token:         op.NewEndpoint(TokenPath),
		Introspection: op.NewEndpoint(IntrospectionPath),
		Userinfo:      op.NewEndpoint(UserInfoPath),
		Revocation:    op.NewEndpoint(RevocationPath),
	}, op.WithServerCORSOptions(nil))

	mux := http.NewServeMux()
	mux.Handle("GET "+DiscoveryPath, ops)
	mux.HandleFunc("GET "+MetadataPath, s.serveMetadata)
	mux.HandleFunc("GET "+AuthorizePath, s.authorize)
	mux.HandleFunc("POST "+AuthorizePath, s.authorize)
	mux.Handle("POST "+TokenPath, guard(ops, clientEndpoint{grant: true}))
	mux.Handle("POST "+IntrospectionPath, guard(ops, clientEndpoint{}))
	mux.Handle("POST "+RevocationPath, guard(ops, clientEndpoint{}))
	if opts.Registrar != nil {
		mux.HandleFunc("POST "+RegistrationPath, s.register)
	}
	mux.Handle("GET "+UserInfoPath, guardUserInfo(ops))
	mux.Handle("POST "+UserInfoPath, guardUserInfo(ops))
	return mux
}

// plainErrorPage is the error page when the pages adapter has none: a
// line of text.
type plainErrorPage struct{}

func (plainErrorPage) ServeProviderError(w http.ResponseWriter, _ *http.Request, status int, message string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(message + "\n"))
}
