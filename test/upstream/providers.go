package upstream

import (
	"net/http"
	"testing"

	"github.com/userd/userd/test/kit"
)

// OIDC is a running oidc-provider (upstream.mjs).
type OIDC struct {
	// Issuer is http://<Host>:<port>.
	Issuer string
}

// OIDCOptions configure oidc-provider.
type OIDCOptions struct {
	// Host is the issuer's host: "localhost" (the default) makes the
	// provider another site than a userd on 127.0.0.1 in a browser, so
	// that its redirect back is a cross-site navigation, as Google's is.
	Host string
	// The one client: confidential, client_secret_basic, PKCE required.
	ClientID, ClientSecret string
	RedirectURIs           []string
	// Accounts are the people who may sign in, by login (their sub);
	// the development sign-in page takes any password.
	Accounts map[string]Claims
}

// StartOIDC runs oidc-provider on a free port for the life of t.
func StartOIDC(t testing.TB, o OIDCOptions) *OIDC {
	t.Helper()
	if o.Host == "" {
		o.Host = "localhost"
	}
	accounts := map[string]Claims{}
	for login, c := range o.Accounts {
		c.Subject = "" // the login is the sub
		accounts[login] = c
	}
	issuer := start(t, "upstream.mjs", map[string]any{
		"port": port(t), "host": o.Host, "clientId": o.ClientID, "clientSecret": o.ClientSecret,
		"redirectUris": o.RedirectURIs, "accounts": accounts,
	}, "oidc-provider")
	return &OIDC{Issuer: issuer}
}

// Mock is a running oauth2-mock-server (mockidp.mjs), which answers
// each flow as it is told.
type Mock struct {
	// Issuer is http://127.0.0.1:<port>.
	Issuer string
}

// Case is how the mock answers a flow.
type Case string

// The cases of mockidp.mjs.
const (
	// OK is the flow as it should be.
	OK Case = "ok"
	// ProviderError redirects back with error=access_denied and no code.
	ProviderError Case = "provider_error"
	// WrongNonce, WrongIssuer, WrongAudience and Expired give an ID
	// token with that claim wrong.
	WrongNonce    Case = "wrong_nonce"
	WrongIssuer   Case = "wrong_issuer"
	WrongAudience Case = "wrong_audience"
	Expired       Case = "expired"
	// ForeignKey signs the ID token with a key that is not in the JWKS,
	// under the kid of the one that is.
	ForeignKey Case = "foreign_key"
)

// StartMock runs oauth2-mock-server on a free port for the life of t.
func StartMock(t testing.TB) *Mock {
	t.Helper()
	return &Mock{Issuer: start(t, "mockidp.mjs", map[string]any{"port": port(t)}, "oauth2-mock-server")}
}

// Expect tells the mock how to answer the flow whose authorization
// request carries state ("" for the next flow that has no entry of its
// own), and as whom: the claims' email_verified is taken as given.
func (m *Mock) Expect(t testing.TB, state string, c Case, person Claims) {
	t.Helper()
	r := kit.Send(t, http.MethodPost, m.Issuer+"/control/flows", map[string]any{"state": state, "case": c, "claims": person}, "")
	if r.Status != http.StatusNoContent {
		t.Fatalf("tell the mock provider %s: %s", c, r)
	}
}
