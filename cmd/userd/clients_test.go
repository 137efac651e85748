package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/domain"
)

var (
	clientIDLine     = regexp.MustCompile(`(?m)^client_id {6}([0-9a-f]{24})$`)
	clientSecretLine = regexp.MustCompile(`(?m)^client_secret  ([A-Za-z0-9_-]{43})$`)
)

// storedClient reads the client id of the SQLite file dsn.
func storedClient(t *testing.T, dsn, id string) (domain.OAuthClient, error) {
	t.Helper()
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	return gormstore.NewOAuthClientStore(db).ByID(t.Context(), domain.OAuthClientID(id))
}

// `userd clients create`, `list`, `rotate-secret` and `delete` on SQLite:
// the secret printed once is the one whose hash is stored, and a new one
// replaces it.
func TestRun_clients_on_sqlite(t *testing.T) {
	dsn := importDB(t)
	code, out, errOut := runCLI(t, "", "clients", "list")
	if code != exitOK || !strings.Contains(out, "no clients yet") {
		t.Fatalf("list of none: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "", "clients", "create", "--name", "Grafana", "--type", "confidential",
		"--redirect-uri", "https://grafana.example.com/login/generic_oauth?tenant=a,b", "--redirect-uri", "http://127.0.0.1/cb",
		"--scope", "openid,email", "--first-party", "--id-token-alg", "EdDSA")
	idm, secretm := clientIDLine.FindStringSubmatch(out), clientSecretLine.FindStringSubmatch(out)
	if code != exitOK || idm == nil || secretm == nil || !strings.Contains(out, `created confidential client "Grafana"`) {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	id, secret := idm[1], secretm[1]
	c, err := storedClient(t, dsn, id)
	if err != nil {
		t.Fatal(err)
	}
	if !c.SecretMatches(secret) || strings.Contains(c.SecretHash, secret) || !c.FirstParty || c.IDTokenSigningAlg != domain.IDTokenEdDSA ||
		!slices.Equal(c.RedirectURIs, []string{"https://grafana.example.com/login/generic_oauth?tenant=a,b", "http://127.0.0.1/cb"}) ||
		!slices.Equal(c.Scopes, []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail}) ||
		!slices.Equal(c.GrantTypes, domain.DefaultOAuthGrantTypes) {
		t.Fatalf("stored %+v", c)
	}

	// A public client: no secret to print.
	code, out, errOut = runCLI(t, "", "clients", "create", "--name", "Desktop", "--type", "public",
		"--redirect-uri", "com.example.app:/cb")
	if code != exitOK || clientIDLine.FindStringSubmatch(out) == nil || strings.Contains(out, "client_secret") {
		t.Fatalf("create public: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	public := clientIDLine.FindStringSubmatch(out)[1]

	code, out, errOut = runCLI(t, "", "clients", "list")
	if code != exitOK || !strings.HasPrefix(out, "CLIENT ID") || !strings.Contains(out, id) || !strings.Contains(out, public) ||
		!strings.Contains(out, "com.example.app:/cb") || strings.Contains(out, secret) || strings.Contains(out, c.SecretHash) {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = runCLI(t, "", "clients", "rotate-secret", id)
	m := clientSecretLine.FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] == secret {
		t.Fatalf("rotate-secret: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if c, err := storedClient(t, dsn, id); err != nil || c.SecretMatches(secret) || !c.SecretMatches(m[1]) {
		t.Fatalf("after rotate-secret: %+v, %v; want the new secret only", c, err)
	}
	code, _, errOut = runCLI(t, "", "clients", "rotate-secret", public)
	if code != exitFailure || !strings.Contains(errOut, "userd: clients rotate-secret: the client is public") {
		t.Errorf("rotate-secret of a public client: exit %d, stderr %q", code, errOut)
	}

	code, out, errOut = runCLI(t, "", "clients", "delete", id)
	if code != exitOK || out != "deleted client "+id+"\n" {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := storedClient(t, dsn, id); err == nil {
		t.Error("the client is still stored")
	}
	code, _, errOut = runCLI(t, "", "clients", "delete", id)
	if code != exitFailure || !strings.Contains(errOut, "userd: clients delete: no client has this id") {
		t.Errorf("delete again: exit %d, stderr %q", code, errOut)
	}

	// The operator's changes are in the audit trail, without an actor.
	var trail []string
	for _, e := range auditEvents(t, dsn) {
		if strings.HasPrefix(e, "oauth_client.") {
			trail = append(trail, e)
		}
	}
	want := []string{
		"oauth_client.created client=" + id + " type=confidential origin=operator",
		"oauth_client.created client=" + public + " type=public origin=operator",
		"oauth_client.secret_rotated client=" + id + " origin=operator",
		"oauth_client.deleted client=" + id + " origin=operator",
	}
	if !slices.Equal(trail, want) {
		t.Errorf("trail\n  %q\nwant\n  %q", trail, want)
	}
}

func TestRun_clients_refusals(t *testing.T) {
	importDB(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"http_redirect", []string{"create", "--name", "App", "--type", "confidential", "--redirect-uri", "http://app.example.com/cb"},
			exitFailure, "userd: clients create: validation failed: redirectUris: entry 1 may use http only on a loopback host"},
		{"private_use_for_confidential", []string{"create", "--name", "App", "--type", "confidential", "--redirect-uri", "com.example.app:/cb"},
			exitFailure, "only a public (native) client may use"},
		{"no_redirect_for_the_code_flow", []string{"create", "--name", "App", "--type", "public"},
			exitFailure, "redirectUris: must hold at least one URI for the authorization_code grant"},
		{"unknown_grant", []string{"create", "--name", "App", "--type", "confidential", "--grant-type", "password"},
			exitFailure, `grantTypes: "password" is not a grant type`},
		{"bad_type", []string{"create", "--name", "App", "--type", "server"}, exitFailure, "type: must be confidential or public"},
		{"no_type", []string{"create", "--name", "App"}, exitUsage, `required flag(s) "type" not set`},
		{"no_name", []string{"create", "--type", "public"}, exitUsage, `required flag(s) "name" not set`},
		{"delete_malformed_id", []string{"delete", "grafana"}, exitUsage, `"grafana" is not a client id`},
		{"delete_no_id", []string{"delete"}, exitUsage, "expected one CLIENT_ID, got 0 arguments"},
		{"rotate_two_ids", []string{"rotate-secret", "a", "b"}, exitUsage, "expected one CLIENT_ID, got 2 arguments"},
		{"rotate_unknown", []string{"rotate-secret", "000000000000000000000000"}, exitFailure, "no client has this id"},
		{"list_argument", []string{"list", "all"}, exitUsage, `unexpected argument "all"`},
		{"unknown_subcommand", []string{"show"}, exitUsage, `unknown subcommand "show": expected create, list, delete or rotate-secret`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"clients"}, tc.args...)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
	if code, out, _ := runCLI(t, "", "clients", "list"); code != exitOK || !strings.Contains(out, "no clients yet") {
		t.Errorf("a refused create made a client: %q", out)
	}
}

func TestRun_clients_refuse_memory(t *testing.T) {
	t.Setenv("USERD_DB_DRIVER", "memory")
	if code, _, errOut := runCLI(t, "", "clients", "list"); code != exitFailure || !strings.Contains(errOut, "memory keeps nothing") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
