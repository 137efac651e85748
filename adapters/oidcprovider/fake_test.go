package oidcprovider_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The fake's clients: a confidential one with every grant, a public one
// with the code flow's, and a confidential one with no grant at all.
const (
	confidentialID = "aaaaaaaaaaaaaaaaaaaaaaaa"
	// confidentialSecret holds characters that Basic must form-encode
	// (RFC 6749 §2.3.1).
	confidentialSecret = "s3cr%t+/:x"
	publicID           = "bbbbbbbbbbbbbbbbbbbbbbbb"
	grantlessID        = "cccccccccccccccccccccccc"
	grantlessSecret    = "grantless-secret"
	issuer             = "https://id.example.com"
)

var errBoom = errors.New("store down")

// fakeProvider answers as the application does, from fields a test sets,
// and records what it was asked.
type fakeProvider struct {
	mu      sync.Mutex
	clients map[string]domain.OAuthClient
	secrets map[string]string

	authorizeID  string
	authorizeErr error
	tokens       application.ProviderTokens
	tokenErr     error
	userInfo     application.UserInfo
	userInfoErr  error
	introspected application.Introspection
	revokeErr    error

	// calls names each method called with what matters of its arguments.
	calls     []string
	authorize application.AuthorizeInput
	scopes    []string
}

func newFake() *fakeProvider {
	f := &fakeProvider{
		clients: map[string]domain.OAuthClient{
			confidentialID: {ID: confidentialID, Type: domain.OAuthClientConfidential, GrantTypes: domain.OAuthGrantTypes},
			publicID: {ID: publicID, Type: domain.OAuthClientPublic,
				GrantTypes: []domain.OAuthGrantType{domain.GrantAuthorizationCode, domain.GrantRefreshToken}},
			grantlessID: {ID: grantlessID, Type: domain.OAuthClientConfidential},
		},
		secrets:     map[string]string{confidentialID: confidentialSecret, grantlessID: grantlessSecret},
		authorizeID: "req-1",
		tokens: application.ProviderTokens{AccessToken: "at", ExpiresIn: 15 * time.Minute,
			Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail}, IDToken: "idt", RefreshToken: "rt"},
	}
	return f
}

func (f *fakeProvider) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeProvider) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeProvider) Algorithms() []string { return []string{"EdDSA", "RS256"} }

func (f *fakeProvider) Authorize(_ context.Context, in application.AuthorizeInput) (string, error) {
	f.record("Authorize")
	f.authorize = in
	return f.authorizeID, f.authorizeErr
}

func (f *fakeProvider) ClientForToken(_ context.Context, id, secret string, secretSent bool) (domain.OAuthClient, error) {
	f.record("ClientForToken " + id)
	c, ok := f.clients[id]
	switch {
	case !ok:
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	case secretSent && (c.IsPublic() || f.secrets[id] != secret):
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	case !secretSent && !c.IsPublic():
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	}
	return c, nil
}

func (f *fakeProvider) ExchangeCode(_ context.Context, c domain.OAuthClient, code, redirectURI, verifier string) (application.ProviderTokens, error) {
	f.record("ExchangeCode " + c.ID.String() + " " + code + " " + redirectURI + " " + verifier)
	return f.tokens, f.tokenErr
}

func (f *fakeProvider) Refresh(_ context.Context, c domain.OAuthClient, token string, scopes []string) (application.ProviderTokens, error) {
	f.record("Refresh " + c.ID.String() + " " + token)
	f.scopes = scopes
	return f.tokens, f.tokenErr
}

func (f *fakeProvider) ClientCredentials(_ context.Context, c domain.OAuthClient, scopes []string) (application.ProviderTokens, error) {
	f.record("ClientCredentials " + c.ID.String())
	f.scopes = scopes
	return f.tokens, f.tokenErr
}

func (f *fakeProvider) UserInfo(_ context.Context, token string) (application.UserInfo, error) {
	f.record("UserInfo " + token)
	return f.userInfo, f.userInfoErr
}

func (f *fakeProvider) Introspect(_ context.Context, c domain.OAuthClient, token string) (application.Introspection, error) {
	f.record("Introspect " + c.ID.String() + " " + token)
	return f.introspected, nil
}

func (f *fakeProvider) Revoke(_ context.Context, c domain.OAuthClient, token string) error {
	f.record("Revoke " + c.ID.String() + " " + token)
	return f.revokeErr
}

// pageRecorder is the pages' error page: it records what it was asked to
// show.
type pageRecorder struct {
	status  int
	message string
}

func (p *pageRecorder) ServeProviderError(w http.ResponseWriter, _ *http.Request, status int, message string) {
	p.status, p.message = status, message
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte("<p>" + message + "</p>"))
}

// newHandler is the adapter over f with the recording error page.
func newHandler(f *fakeProvider) (http.Handler, *pageRecorder) {
	page := &pageRecorder{}
	h := oidcprovider.New(f, oidcprovider.Options{Issuer: issuer + "/", ContinuePath: "/oauth2/authorize/continue", ErrorPage: page})
	return h, page
}

// req is a request of a test: method, target, a form body (sent as
// application/x-www-form-urlencoded unless headers say otherwise), and
// headers as name, value pairs.
type req struct {
	method, target, form string
	headers              []string
}

func (q req) do(t *testing.T, h http.Handler) *httptest.ResponseRecorder {
	t.Helper()
	var r *http.Request
	if q.form != "" {
		r = httptest.NewRequest(q.method, q.target, strings.NewReader(q.form))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		r = httptest.NewRequest(q.method, q.target, nil)
	}
	for i := 0; i+1 < len(q.headers); i += 2 {
		r.Header.Set(q.headers[i], q.headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
