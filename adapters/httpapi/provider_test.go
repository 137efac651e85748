package httpapi_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The OpenID provider's endpoints as the router serves them: mounted
// only when Options.Provider is set, behind the middleware of every
// route, and answering as openapi.yaml says (every answer here is
// validated against it). adapters/oidcprovider tests the endpoints'
// rules in depth; this fake answers one way per input.

const (
	providerIssuer = "http://localhost:8080"
	// The fake's clients.
	oidcConfidential = "aaaaaaaaaaaaaaaaaaaaaaaa"
	oidcSecret       = "s3cret"
	oidcPublic       = "bbbbbbbbbbbbbbbbbbbbbbbb"
	oidcUnknown      = "cccccccccccccccccccccccc"
)

// withProviderEndpoints mounts the provider's endpoints over the fake.
func withProviderEndpoints() serverOption {
	return func(c *serverConfig) { c.endpoints = oidcFake{} }
}

type oidcFake struct{}

var _ oidcprovider.Provider = oidcFake{}

func (oidcFake) Algorithms() []string { return []string{"RS256", "EdDSA"} }

func (oidcFake) Authorize(_ context.Context, in application.AuthorizeInput) (string, error) {
	switch {
	case in.ClientID == oidcUnknown:
		return "", domain.ErrOAuthClientNotFound
	case in.State == "deny":
		return "", &application.AuthorizeError{Location: in.RedirectURI + "?error=invalid_scope&state=deny&iss=" + providerIssuer,
			Err: domain.NewOAuthError(domain.OAuthInvalidScope, "no")}
	}
	return "req-1", nil
}

func (oidcFake) ClientForToken(_ context.Context, id, secret string, secretSent bool) (domain.OAuthClient, error) {
	switch {
	case id == oidcConfidential && secretSent && secret == oidcSecret:
		return domain.OAuthClient{ID: oidcConfidential, Type: domain.OAuthClientConfidential, GrantTypes: domain.OAuthGrantTypes}, nil
	case id == oidcPublic && !secretSent:
		return domain.OAuthClient{ID: oidcPublic, Type: domain.OAuthClientPublic,
			GrantTypes: []domain.OAuthGrantType{domain.GrantAuthorizationCode, domain.GrantRefreshToken}}, nil
	}
	return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
}

var oidcTokens = application.ProviderTokens{AccessToken: "a.b.c", ExpiresIn: 15 * time.Minute,
	Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeOfflineAccess}, IDToken: "d.e.f", RefreshToken: "r1"}

func (oidcFake) ExchangeCode(_ context.Context, _ domain.OAuthClient, code, _, _ string) (application.ProviderTokens, error) {
	if code != "good" {
		return application.ProviderTokens{}, domain.NewOAuthError(domain.OAuthInvalidGrant, "the code is unknown, used or expired")
	}
	return oidcTokens, nil
}

func (oidcFake) Refresh(context.Context, domain.OAuthClient, string, []string) (application.ProviderTokens, error) {
	return oidcTokens, nil
}

func (oidcFake) ClientCredentials(context.Context, domain.OAuthClient, []string) (application.ProviderTokens, error) {
	return application.ProviderTokens{AccessToken: "a.b.c", ExpiresIn: time.Minute}, nil
}

func (oidcFake) UserInfo(_ context.Context, token string) (application.UserInfo, error) {
	if token != "good" {
		return application.UserInfo{}, domain.ErrInvalidToken
	}
	email, verified := "ada@example.com", true
	return application.UserInfo{Subject: "0123456789abcdef01234567",
		Claims: domain.UserClaims{Email: &email, EmailVerified: &verified}}, nil
}

func (oidcFake) Introspect(_ context.Context, c domain.OAuthClient, token string) (application.Introspection, error) {
	if token != "live" {
		return application.Introspection{}, nil
	}
	return application.Introspection{Active: true, Subject: "0123456789abcdef01234567", ClientID: c.ID,
		Scopes: []domain.OAuthScope{domain.ScopeOpenID}, IssuedAt: time.Unix(1700000000, 0), ExpiresAt: time.Unix(1700000900, 0),
		TokenType: application.TokenTypeAccess, SessionID: "s1"}, nil
}

func (oidcFake) Revoke(_ context.Context, _ domain.OAuthClient, token string) error {
	if token == "panic" {
		panic("the provider crashed")
	}
	return nil
}

func oidcBasic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

const oidcAuthorizeQuery = "client_id=" + oidcPublic + "&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code" +
	"&scope=openid&state=secret-state&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256"

func TestProvider_routes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withProviderEndpoints())
	form := withHeader("Content-Type", formContentType)
	basic := withHeader("Authorization", oidcBasic(oidcConfidential, oidcSecret))
	tests := []struct {
		name, method, path string
		body               any
		opts               []reqOption
		status             int
		location           string
	}{
		{"openid_configuration", "GET", "/.well-known/openid-configuration", nil, nil, 200, ""},
		{"authorization_server_metadata", "GET", "/.well-known/oauth-authorization-server", nil, nil, 200, ""},
		{"authorize", "GET", "/oauth2/authorize?" + oidcAuthorizeQuery, nil, nil, 303, "/oauth2/authorize/continue?request=req-1"},
		{"authorize_refused", "GET", "/oauth2/authorize?" + strings.Replace(oidcAuthorizeQuery, "secret-state", "deny", 1), nil, nil,
			303, "https://app.example/cb?error=invalid_scope&state=deny&iss=" + providerIssuer},
		{"authorize_unknown_client", "GET", "/oauth2/authorize?" + strings.Replace(oidcAuthorizeQuery, oidcPublic, oidcUnknown, 1), nil, nil, 400, ""},
		{"authorize_form", "POST", "/oauth2/authorize", oidcAuthorizeQuery, []reqOption{form}, 303, "/oauth2/authorize/continue?request=req-1"},
		{"authorize_form_duplicate", "POST", "/oauth2/authorize", oidcAuthorizeQuery + "&redirect_uri=https%3A%2F%2Fevil.example%2Fcb", []reqOption{form}, 400, ""},
		{"token_code", "POST", "/oauth2/token", "grant_type=authorization_code&code=good&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=v",
			[]reqOption{form, basic}, 200, ""},
		{"token_refresh_public", "POST", "/oauth2/token", "grant_type=refresh_token&refresh_token=r0&client_id=" + oidcPublic, []reqOption{form}, 200, ""},
		{"token_client_credentials", "POST", "/oauth2/token", "grant_type=client_credentials", []reqOption{form, basic}, 200, ""},
		{"token_invalid_grant", "POST", "/oauth2/token", "grant_type=authorization_code&code=bad&redirect_uri=https%3A%2F%2Fapp.example%2Fcb",
			[]reqOption{form, basic}, 400, ""},
		{"token_wrong_secret", "POST", "/oauth2/token", "grant_type=client_credentials",
			[]reqOption{form, withHeader("Authorization", oidcBasic(oidcConfidential, "nope"))}, 401, ""},
		{"token_not_a_form", "POST", "/oauth2/token", `{"grant_type":"client_credentials"}`, nil, 400, ""},
		{"userinfo", "GET", "/oauth2/userinfo", nil, []reqOption{withToken("good")}, 200, ""},
		{"userinfo_form", "POST", "/oauth2/userinfo", "access_token=good", []reqOption{form}, 200, ""},
		{"userinfo_no_token", "GET", "/oauth2/userinfo", nil, nil, 401, ""},
		{"userinfo_bad_token", "POST", "/oauth2/userinfo", nil, []reqOption{withToken("bad")}, 401, ""},
		{"introspect_live", "POST", "/oauth2/introspect", "token=live", []reqOption{form, basic}, 200, ""},
		{"introspect_other", "POST", "/oauth2/introspect", "token=other", []reqOption{form, basic}, 200, ""},
		{"introspect_public_client", "POST", "/oauth2/introspect", "token=live&client_id=" + oidcPublic, []reqOption{form}, 401, ""},
		{"revoke", "POST", "/oauth2/revoke", "token=r1&client_id=" + oidcPublic, []reqOption{form}, 200, ""},
		// A crash reaches the router's recovery with nothing written.
		{"revoke_panics", "POST", "/oauth2/revoke", "token=panic&client_id=" + oidcPublic, []reqOption{form}, 500, ""},
		{"revoke_without_token", "POST", "/oauth2/revoke", "client_id=" + oidcPublic, []reqOption{form}, 400, ""},
		{"revoke_wrong_secret", "POST", "/oauth2/revoke", "token=r1", []reqOption{form, withHeader("Authorization", oidcBasic(oidcConfidential, "x"))}, 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := s.do(tt.method, tt.path, tt.body, tt.opts...)
			if res.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.Status, tt.status, res.Body)
			}
			if got := res.Header.Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
		})
	}
	// The access log writes paths, never a query: an authorization
	// request's state and challenge stay out of it.
	if logs := s.logs.String(); strings.Contains(logs, "secret-state") || strings.Contains(logs, "E9Melhoa2Ow") {
		t.Errorf("the access log holds the query: %s", logs)
	}
	if logs := s.logs.String(); !strings.Contains(logs, `"path":"/oauth2/authorize"`) {
		t.Errorf("no access log line of /oauth2/authorize")
	}
}

// With the provider off (Options.Provider nil, USERD_OIDC_PROVIDER=false),
// none of its routes exists.
func TestProvider_off_is_404(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, r := range []struct{ method, path string }{
		{"GET", "/.well-known/openid-configuration"}, {"GET", "/.well-known/oauth-authorization-server"},
		{"GET", "/oauth2/authorize"}, {"POST", "/oauth2/authorize"}, {"POST", "/oauth2/token"},
		{"GET", "/oauth2/userinfo"}, {"POST", "/oauth2/userinfo"}, {"POST", "/oauth2/introspect"}, {"POST", "/oauth2/revoke"},
	} {
		wantProblem(t, s.do(r.method, r.path, nil), http.StatusNotFound, "not_found")
	}
}

// A method a provider route lacks is the router's 405, as on every route.
func TestProvider_method_not_allowed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withProviderEndpoints())
	res := s.do("DELETE", "/oauth2/token", nil)
	wantProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
	if got := res.Header.Get("Allow"); got != "POST" {
		t.Errorf("Allow %q", got)
	}
	// Every answer of the provider's endpoints is no-store, this one too.
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
}

// withDynamicRegistration opens the provider's dynamic registration over
// the application's clients.
func withDynamicRegistration() serverOption { return func(c *serverConfig) { c.registration = true } }

// Dynamic registration (RFC 7591): 404 while closed; open, a public client
// of the code flow for anyone, within the /auth allowance; refusals in
// RFC 7591's codes; the metadata names the endpoint only while it is open.
func TestProvider_dynamic_registration(t *testing.T) {
	t.Parallel()
	closed := newTestServer(t, withProviderEndpoints())
	body := map[string]any{"redirect_uris": []string{"http://127.0.0.1/callback"}, "client_name": "MCP tool",
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"}, "scope": "openid email", "software_id": "ignored"}
	if res := closed.do("POST", "/oauth2/register", body); res.Status != http.StatusNotFound {
		t.Fatalf("closed: %d, want 404", res.Status)
	}
	if res := closed.do("GET", "/.well-known/openid-configuration", nil); strings.Contains(string(res.Body), "registration_endpoint") {
		t.Error("closed, the metadata names registration_endpoint")
	}

	s := newTestServer(t, withProviderEndpoints(), withDynamicRegistration(), withAuthIPLimit(2))
	res := s.do("POST", "/oauth2/register", body)
	var got struct {
		ClientID   string   `json:"client_id"`
		IssuedAt   int64    `json:"client_id_issued_at"`
		Name       string   `json:"client_name"`
		Redirects  []string `json:"redirect_uris"`
		PostLogout []string `json:"post_logout_redirect_uris"`
		Grants     []string `json:"grant_types"`
		Responses  []string `json:"response_types"`
		Method     string   `json:"token_endpoint_auth_method"`
		Scope      string   `json:"scope"`
	}
	wantJSON(t, res, http.StatusCreated, &got)
	if got.Method != "none" || got.Scope != "openid email" || len(got.Grants) != 2 {
		t.Errorf("registered = %+v", got)
	}
	if c, err := s.svc.OAuthClients.Client(context.Background(), got.ClientID); err != nil || !c.IsPublic() || c.FirstParty {
		t.Errorf("stored client = %+v, %v", c, err)
	}
	if res := s.do("GET", "/.well-known/openid-configuration", nil); !strings.Contains(string(res.Body), `"registration_endpoint":"`+providerIssuer+`/oauth2/register"`) {
		t.Errorf("open, the metadata lacks registration_endpoint: %s", res.Body)
	}
	bad := map[string]any{"redirect_uris": []string{"http://example.com/cb"}}
	var refusal struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	wantJSON(t, s.do("POST", "/oauth2/register", bad), http.StatusBadRequest, &refusal)
	if refusal.Error != "invalid_redirect_uri" {
		t.Errorf("a bad redirect URI: %q", refusal.Error)
	}
	secretful := map[string]any{"redirect_uris": []string{"http://127.0.0.1/cb"}, "token_endpoint_auth_method": "client_secret_basic"}
	// The allowance of two is spent: the third is 429.
	if res := s.do("POST", "/oauth2/register", secretful); res.Status != http.StatusTooManyRequests {
		t.Errorf("past the /auth allowance: %d, want 429", res.Status)
	}
	s2 := newTestServer(t, withProviderEndpoints(), withDynamicRegistration())
	wantJSON(t, s2.do("POST", "/oauth2/register", secretful), http.StatusBadRequest, &refusal)
	if refusal.Error != "invalid_client_metadata" {
		t.Errorf("a confidential client: %q", refusal.Error)
	}
}
