package oidcprovider

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// server is the provider's op.Server: zitadel routes and decodes the
// requests of the JSON endpoints, the guard (guard.go) has read their
// form strictly, and each method here calls the application. Everything
// the provider decides (codes, tokens, sessions, scopes) is the
// application's; this only translates.
type server struct {
	op.UnimplementedServer
	p    Provider
	opts Options
}

var _ op.Server = (*server)(nil)

// VerifyClient authenticates the client of the token and revocation
// endpoints: by its secret when one was sent (Basic, even with an empty
// secret, or a client_secret in the form), or as a public client by its
// id alone. An empty client_secret in the form counts as absent, as
// empty parameters do elsewhere in userd: some libraries send one for a
// public client.
func (s *server) VerifyClient(ctx context.Context, r *op.Request[op.ClientCredentials]) (op.Client, error) {
	cc := r.Data
	if cc.ClientAssertion != "" {
		return nil, invalidClient("client assertions are not supported; use client_secret_basic or client_secret_post")
	}
	_, _, basic := (&http.Request{Header: r.Header}).BasicAuth()
	c, err := s.p.ClientForToken(ctx, cc.ClientID, cc.ClientSecret, basic || r.Form.Get(paramClientSecret) != "")
	if err != nil {
		return nil, s.oauthError(ctx, err)
	}
	return client{c}, nil
}

// CodeExchange answers grant_type=authorization_code.
func (s *server) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	t, err := s.p.ExchangeCode(ctx, domainClient(r.Client), r.Data.Code, r.Data.RedirectURI, r.Data.CodeVerifier)
	return s.tokens(ctx, t, err)
}

// RefreshToken answers grant_type=refresh_token.
func (s *server) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	t, err := s.p.Refresh(ctx, domainClient(r.Client), r.Data.RefreshToken, r.Data.Scopes)
	return s.tokens(ctx, t, err)
}

// ClientCredentialsExchange answers grant_type=client_credentials. The
// library has refused a public client already (invalid_client).
func (s *server) ClientCredentialsExchange(ctx context.Context, r *op.ClientRequest[oidc.ClientCredentialsRequest]) (*op.Response, error) {
	t, err := s.p.ClientCredentials(ctx, domainClient(r.Client), r.Data.Scope)
	return s.tokens(ctx, t, err)
}

// tokenResponse is RFC 6749 §5.1's answer, with OpenID Connect's
// id_token.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	IDToken      string `json:"id_token,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

func (s *server) tokens(ctx context.Context, t application.ProviderTokens, err error) (*op.Response, error) {
	if err != nil {
		return nil, s.oauthError(ctx, err)
	}
	return op.NewResponse(tokenResponse{
		AccessToken: t.AccessToken, TokenType: "Bearer", ExpiresIn: int64(t.ExpiresIn / time.Second),
		Scope: joinScopes(t.Scopes), IDToken: t.IDToken, RefreshToken: t.RefreshToken,
	}), nil
}

// UserInfo answers /oauth2/userinfo: sub and the claims the token's
// scopes reveal (OpenID Connect Core §5.3.2).
func (s *server) UserInfo(ctx context.Context, r *op.Request[oidc.UserInfoRequest]) (*op.Response, error) {
	info, err := s.p.UserInfo(ctx, r.Data.AccessToken)
	if errors.Is(err, domain.ErrInvalidToken) {
		e := newOAuthError(domain.OAuthInvalidToken, "the access token is invalid, expired or revoked")
		return nil, op.NewStatusError(e, http.StatusUnauthorized)
	}
	if err != nil {
		return nil, s.oauthError(ctx, err)
	}
	return op.NewResponse(userInfoClaims(info)), nil
}

// userInfoClaims are the members of a userinfo answer: a claim the
// scopes do not reveal is absent, never null.
func userInfoClaims(info application.UserInfo) map[string]any {
	out := map[string]any{"sub": info.Subject.String()}
	c := info.Claims
	if c.Name != nil {
		out["name"] = *c.Name
	}
	if c.UpdatedAt != nil {
		out["updated_at"] = c.UpdatedAt.Unix()
	}
	if c.Email != nil {
		out["email"] = *c.Email
	}
	if c.EmailVerified != nil {
		out["email_verified"] = *c.EmailVerified
	}
	if c.Profiles != nil {
		out["profiles"] = c.Profiles
	}
	return out
}

// introspection is RFC 7662 §2.2's answer; an inactive token is
// {"active":false} and nothing else.
type introspection struct {
	Active    bool   `json:"active"`
	Subject   string `json:"sub,omitempty"`
	ClientID  string `json:"client_id,omitempty"`
	Scope     string `json:"scope,omitempty"`
	ExpiresAt int64  `json:"exp,omitempty"`
	IssuedAt  int64  `json:"iat,omitempty"`
	TokenType string `json:"token_type,omitempty"`
	SessionID string `json:"sid,omitempty"`
}

// Introspect answers /oauth2/introspect, for a confidential client only
// (the library has refused a request without a secret).
func (s *server) Introspect(ctx context.Context, r *op.Request[op.IntrospectionRequest]) (*op.Response, error) {
	cc := r.Data.ClientCredentials
	if cc.ClientAssertion != "" {
		return nil, invalidClient("client assertions are not supported; use client_secret_basic or client_secret_post")
	}
	c, err := s.p.ClientForToken(ctx, cc.ClientID, cc.ClientSecret, true)
	if err != nil {
		return nil, s.oauthError(ctx, err)
	}
	if c.IsPublic() {
		return nil, invalidClient("introspection is for confidential clients")
	}
	in, err := s.p.Introspect(ctx, c, r.Data.Token)
	if err != nil {
		return nil, s.oauthError(ctx, err)
	}
	if !in.Active {
		return op.NewResponse(introspection{}), nil
	}
	return op.NewResponse(introspection{
		Active: true, Subject: in.Subject, ClientID: in.ClientID.String(), Scope: joinScopes(in.Scopes),
		ExpiresAt: in.ExpiresAt.Unix(), IssuedAt: in.IssuedAt.Unix(), TokenType: in.TokenType, SessionID: in.SessionID,
	}), nil
}

// Revocation answers /oauth2/revoke: 200 with no body whatever the token
// (RFC 7009 §2.2).
func (s *server) Revocation(ctx context.Context, r *op.ClientRequest[oidc.RevocationRequest]) (*op.Response, error) {
	if err := s.p.Revoke(ctx, domainClient(r.Client), r.Data.Token); err != nil {
		return nil, s.oauthError(ctx, err)
	}
	return op.NewResponse(nil), nil
}

// Discovery answers /.well-known/openid-configuration.
func (s *server) Discovery(context.Context, *op.Request[struct{}]) (*op.Response, error) {
	resp := op.NewResponse(s.metadata())
	resp.Header.Set("Cache-Control", metadataCacheControl)
	return resp, nil
}

// oauthError translates an error of the application into the library's:
// a refusal keeps its code and description (invalid_client a 401, RFC
// 6749 §5.2), a wrong client credential is invalid_client, and anything
// else a 500 server_error whose cause goes to the log only.
func (s *server) oauthError(ctx context.Context, err error) error {
	var refusal *domain.OAuthError
	switch {
	case errors.As(err, &refusal):
		e := newOAuthError(refusal.Code, refusal.Description)
		switch refusal.Code {
		case domain.OAuthInvalidClient:
			return op.NewStatusError(e, http.StatusUnauthorized)
		case domain.OAuthServerError:
			return op.NewStatusError(e, http.StatusInternalServerError)
		case domain.OAuthTemporarilyUnavailable:
			return op.NewStatusError(e, http.StatusServiceUnavailable)
		}
		return op.NewStatusError(e, http.StatusBadRequest)
	case errors.Is(err, domain.ErrInvalidClientCredentials):
		return invalidClient("client authentication failed")
	}
	// The application's errors name no token, code or secret.
	s.opts.Logger.LogAttrs(ctx, slog.LevelError, "oidc provider", slog.String("error", err.Error()))
	return op.NewStatusError(oidc.ErrServerError().WithDescription("internal error"), http.StatusInternalServerError)
}

func invalidClient(description string) error {
	return op.NewStatusError(oidc.ErrInvalidClient().WithDescription("%s", description), http.StatusUnauthorized)
}

// newOAuthError is an oidc.Error of any code: the library names only
// its own, in a type it does not export, which setErrorType fills.
func newOAuthError(code, description string) *oidc.Error {
	e := &oidc.Error{Description: description}
	setErrorType(&e.ErrorType, code)
	return e
}

func setErrorType[T ~string](dst *T, code string) { *dst = T(code) }

// joinScopes writes scopes as OAuth does, space-separated.
func joinScopes(scopes []domain.OAuthScope) string {
	return strings.Join(domain.ScopeStrings(scopes), " ")
}
