// Package idpflow tests userd's sign-in through other identity providers
// (issue 27, contract-identity.md section 2) from outside: the real
// userd binary (test/userdproc) against providers that no one here
// wrote (test/upstream):
//   - oidc-provider, an OpenID-certified provider standing for Google or
//     Okta, on http://localhost:<port> so that its redirect back is a
//     cross-site navigation, driven in a real headless Chromium
//     (test/chromium): the first sign-in creates the account, the
//     second finds it, an existing password account is linked after its
//     own sign-in, an identity unlinked, a cancelled flow leaves no
//     session, and an app signs in with the provider through userd's
//     own OpenID provider and gets amr ["fed"] (browser_test.go);
//   - oauth2-mock-server, told to misbehave, through a plain net/http
//     agent: each refusal's page, status, audit reason and the absence
//     of a session (refusals_test.go), a password account linked after
//     its own sign-in and then a second factor's step
//     (secondfactor_test.go), and a flow begun on one node and finished
//     on another on PostgreSQL and on MariaDB (nodes_test.go);
//   - test/githubstub for a provider of kind github (github_test.go);
//   - a second userd as the upstream OpenID provider, in Chromium
//     (userd_test.go), in the same browser.
//
// Without node, the pinned packages (make node-deps), chromium or a
// database, the tests that need them skip, or fail when CI=true.
package idpflow

import (
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// userdBinary is the userd binary built once for the package.
var userdBinary string

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-idpflow-", &userdBinary)) }

const (
	adminEmail    = "root@example.com"
	adminPassword = "federation-Admin-Passphrase-5"
	userPassword  = "federated-Person-Passphrase-7"
	// clientSecret is the secret of userd's client at every upstream: a
	// test value, never a real one.
	clientSecret = "upstream-client-secret-of-the-tests" //nolint:gosec // G101: a test's value
)

// userd is a running userd, its public URL, and its admin's access
// token.
type userd struct {
	node  *userdproc.Node
	url   string
	admin string
}

// startUserd starts the binary on http://127.0.0.1:<a free port>, which
// is USERD_PUBLIC_URL, with a bootstrap admin, a scratch SQLite database
// and cheap password hashing; extra settings go over these.
func startUserd(t *testing.T, extra ...map[string]string) userd {
	t.Helper()
	n, url := userdproc.StartScratch(t, userdBinary, "127.0.0.1", adminEmail, adminPassword, extra...)
	return userd{node: n, url: url, admin: kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken}
}

// api makes a request to userd's API with a JSON body (nil for none) and
// a bearer token.
func (u userd) api(t testing.TB, method, path string, body any, token string) kit.Reply {
	t.Helper()
	return kit.Send(t, method, u.node.Base+path, body, token)
}

// callback is the redirect URI of the provider slug at this userd.
func (u userd) callback(slug string) string { return u.url + "/auth/idp/" + slug + "/callback" }

// addProvider creates a provider of kind oidc as the admin: body's
// members over slug, a display name, the issuer, the client and the
// default scopes (a member of body that is nil is left out).
func (u userd) addProvider(t testing.TB, slug, displayName, issuer, clientID string, body map[string]any) {
	t.Helper()
	req := map[string]any{
		"slug": slug, "displayName": displayName, "kind": "oidc", "issuer": issuer,
		"clientId": clientID, "clientSecret": clientSecret, "scopes": []string{"openid", "email", "profile"},
	}
	maps.Copy(req, body)
	maps.DeleteFunc(req, func(_ string, v any) bool { return v == nil })
	r := u.api(t, http.MethodPost, "/api/identity-providers", req, u.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("create the identity provider %s: %s", slug, r)
	}
	if strings.Contains(string(r.Body), clientSecret) {
		t.Errorf("the created provider %s shows its client secret: %s", slug, r.Body)
	}
}

// account is the part of a user the tests read.
type account struct {
	ID            string `json:"id"`
	Email         string `json:"email"`
	Name          string `json:"name"`
	EmailVerified bool   `json:"emailVerified"`
}

// usersByEmail lists the accounts of email, as the admin sees them.
func (u userd) usersByEmail(t testing.TB, email string) []account {
	t.Helper()
	var users []account
	kit.Want(t, "the users of "+email, u.api(t, http.MethodGet, "/api/users?"+url.Values{"email": {email}}.Encode(), nil, u.admin), http.StatusOK, &users)
	return users
}

// userByEmail is the one account of email.
func (u userd) userByEmail(t testing.TB, email string) account {
	t.Helper()
	users := u.usersByEmail(t, email)
	if len(users) != 1 {
		t.Fatalf("%d accounts of %s, want 1", len(users), email)
	}
	return users[0]
}

// identity is an identity linked to an account, as the API lists it.
type identity struct {
	Provider   string `json:"provider"`
	Subject    string `json:"subject"`
	Email      string `json:"email"`
	LinkedAt   string `json:"linkedAt"`
	LastUsedAt string `json:"lastUsedAt"`
}

// identities lists the identities of the user id ("me" with the user's
// own token), as token sees them.
func (u userd) identities(t testing.TB, id, token string) []identity {
	t.Helper()
	var out []identity
	kit.Want(t, "the identities of "+id, u.api(t, http.MethodGet, "/api/users/"+id+"/identities", nil, token), http.StatusOK, &out)
	return out
}

// auditEvent is one entry of GET /api/audit.
type auditEvent struct {
	Type      string `json:"type"`
	ActorID   string `json:"actorId"`
	SubjectID string `json:"subjectId"`
	Detail    string `json:"detail"`
}

// events lists the audit events of type whose detail names the provider
// slug, newest first (the last 200).
func (u userd) events(t testing.TB, typ, slug string) []auditEvent {
	t.Helper()
	var all, out []auditEvent
	kit.Want(t, "the audit events "+typ, u.api(t, http.MethodGet, "/api/audit?"+url.Values{
		"type": {typ}, "order": {"newest"}, "limit": {"200"}}.Encode(), nil, u.admin), http.StatusOK, &all)
	for _, e := range all {
		if hasField(e.Detail, "provider", slug) {
			out = append(out, e)
		}
	}
	return out
}

// hasField says whether an audit detail ("k=v k=v") has key=value.
func hasField(detail, key, value string) bool {
	for f := range strings.FieldsSeq(detail) {
		if f == key+"="+value {
			return true
		}
	}
	return false
}

// wantRefusal fails t unless the newest refusal of the provider slug
// names reason, and leaves no identity or secret in its detail.
func (u userd) wantRefusal(t testing.TB, slug, reason string) {
	t.Helper()
	refused := u.events(t, "idp.sign_in_refused", slug)
	if len(refused) == 0 || !hasField(refused[0].Detail, "reason", reason) {
		t.Errorf("the refusals of %s: %+v, want the newest with reason=%s", slug, refused, reason)
		return
	}
	if strings.Contains(refused[0].Detail, clientSecret) || strings.Contains(refused[0].Detail, "@") {
		t.Errorf("the refusal's detail %q names a secret or an email", refused[0].Detail)
	}
}
