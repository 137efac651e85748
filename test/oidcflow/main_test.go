// Package oidcflow tests userd's OpenID provider from outside, with
// clients that no one here wrote: the real userd binary (test/userdproc)
// on a scratch SQLite database, as the issuer http://127.0.0.1:<port>,
// and
//   - openid-client 6 (Node.js, rp.mjs) through the code flow with PKCE,
//     the sign-in, consent and account pages driven in a real headless
//     Chromium (test/chromium), the callback caught by a loopback
//     listener of the test; the library checks the ID token itself
//     (signature against the JWKS, iss, aud, nonce, at_hash, RFC 9207's
//     iss parameter), then userinfo, introspection, refresh, revocation
//     and RP-Initiated Logout (openidclient_test.go);
//   - oauth4webapi 3 (cc.mjs): client_credentials and RFC 7662
//     introspection of a confidential client, from the RFC 8414
//     metadata (oauth4webapi_test.go);
//   - coreos/go-oidc and golang.org/x/oauth2: discovery, the code flow
//     with PKCE, the ID token verified by go-oidc's verifier, userinfo,
//     a key rotation (gooidc_test.go);
//   - plain net/http, whose agent signs in on the pages and carries the
//     provider's cookie (agent_test.go): the negative matrix of the
//     contract, each with its RFC's error code (errors_test.go), the
//     endpoints' other answers and the provider off (answers_test.go),
//     acr_values=aal2 (acr_test.go), a flow across two nodes on
//     PostgreSQL and on MariaDB/MySQL (nodes_test.go).
//
// The Node.js packages are those pinned in test/node (make node-deps);
// without node, the packages, chromium or a database, the tests that
// need them skip, or fail when CI=true.
package oidcflow

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// userdBinary is the userd binary built once for the package.
var userdBinary string

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-oidcflow-", &userdBinary)) }

const (
	adminEmail    = "root@example.com"
	adminPassword = "provider-Admin-Passphrase-3"
	userPassword  = "relying-Party-Passphrase-8"
)

// registeredRedirect is the redirect URI every client registers: a
// loopback one without a port, which stands for any port (RFC 8252,
// section 7.3); the test's listener is on a port of its own.
const registeredRedirect = "http://127.0.0.1/cb"

// provider is a running userd, its issuer, and its admin's access token.
type provider struct {
	node   *userdproc.Node
	issuer string
	admin  string
}

// startProvider starts the binary on http://127.0.0.1:<a free port>,
// which is USERD_PUBLIC_URL and so the issuer, with a bootstrap admin, a
// scratch SQLite database, cheap password hashing and no reuse grace for
// refresh tokens (a second use is a reuse at once); extra settings go
// over these.
func startProvider(t *testing.T, extra ...map[string]string) provider {
	t.Helper()
	// No reuse grace: a second use of a refresh token is a reuse at once.
	settings := append([]map[string]string{{"USERD_REFRESH_REUSE_GRACE": "0s"}}, extra...)
	n, issuer := userdproc.StartScratch(t, userdBinary, "127.0.0.1", adminEmail, adminPassword, settings...)
	return provider{node: n, issuer: issuer, admin: kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken}
}

// client is an OpenID client as POST /api/oauth-clients answers it.
type client struct {
	ID     string `json:"id"`
	Secret string `json:"clientSecret"`
	Type   string `json:"type"`
	Alg    string `json:"idTokenSigningAlg"`
}

// newClient registers a client as the admin: body's members over those
// of a confidential, third-party client of the redirect URI
// registeredRedirect with every grant of its type.
func (p provider) newClient(t *testing.T, name string, body map[string]any) client {
	t.Helper()
	req := map[string]any{
		"name":         name,
		"type":         "confidential",
		"redirectUris": []string{registeredRedirect},
		"grantTypes":   []string{"authorization_code", "refresh_token", "client_credentials"},
	}
	maps.Copy(req, body)
	if req["type"] == "public" && body["grantTypes"] == nil {
		req["grantTypes"] = []string{"authorization_code", "refresh_token"}
	}
	var c client
	kit.Want(t, "create client "+name, p.api(t, http.MethodPost, "/api/oauth-clients", req, p.admin), http.StatusCreated, &c)
	if (c.Type == "confidential") != (c.Secret != "") {
		t.Fatalf("client %s of type %q came with secret %q", name, c.Type, c.Secret)
	}
	return c
}

// api makes a request to userd's API with a JSON body (nil for none) and
// an optional bearer token.
func (p provider) api(t *testing.T, method, path string, body any, token string) kit.Reply {
	t.Helper()
	return kit.Send(t, method, p.node.Base+path, body, token)
}

// register creates a customer through open registration and returns its
// id.
func (p provider) register(t *testing.T, name, email string) string {
	t.Helper()
	return kit.Register(t, p.node.Base, name, email, userPassword).ID
}

// oauthError is an error answer of RFC 6749 (section 5.2), or the error
// parameters of a redirect (section 4.1.2.1).
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// wantOAuthError fails t unless r is a JSON error of the token endpoint
// with the status and the code, answered with Cache-Control: no-store.
func wantOAuthError(t *testing.T, what string, r kit.Reply, status int, code string) {
	t.Helper()
	var e oauthError
	if r.Status != status || json.Unmarshal(r.Body, &e) != nil || e.Error != code {
		t.Errorf("%s: %s, want %d with error %q", what, r, status, code)
		return
	}
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("%s: Cache-Control %q, want no-store", what, cc)
	}
}
