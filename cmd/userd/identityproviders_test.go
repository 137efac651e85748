package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
)

// providersDB is a SQLite file with a secret key of the test's, so that
// the test can open the client secrets the commands sealed.
func providersDB(t *testing.T) (string, *secretbox.Box) {
	t.Helper()
	dsn := importDB(t)
	key := secretbox.NewKey()
	t.Setenv("USERD_SECRET_KEY", secretbox.EncodeKey(key))
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return dsn, box
}

// storedProvider reads the provider slug of the SQLite file dsn, its
// secret opened by box.
func storedProvider(t *testing.T, dsn string, box *secretbox.Box, slug string) (domain.IdentityProvider, error) {
	t.Helper()
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	return gormstore.NewIdentityProviderStore(db, box).Provider(t.Context(), slug)
}

// `userd identity-providers create`, `list`, `update` and `delete` on
// SQLite: the secret read from stdin or the environment is the one
// stored, and it is never printed.
func TestRun_identity_providers_on_sqlite(t *testing.T) {
	dsn, box := providersDB(t)
	t.Setenv("USERD_PUBLIC_URL", "https://id.example.com/")
	const acmeSecret, githubSecret, newSecret = "acme-secret-from-stdin", "github-secret-from-env", "acme-new-secret"
	code, out, errOut := runCLI(t, "", "identity-providers", "list")
	if code != exitOK || !strings.Contains(out, "no identity providers yet") {
		t.Fatalf("list of none: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, errOut = runCLI(t, acmeSecret+"\n", "identity-providers", "create", "acme", "--display-name", "Acme SSO",
		"--kind", "oidc", "--issuer", "https://sso.acme.example", "--client-id", "userd", "--allowed-domain", "acme.example,Acme.ORG",
		"--client-secret-stdin")
	if code != exitOK || out != "created oidc identity provider \"Acme SSO\" (acme)\ncallback URL  https://id.example.com/auth/idp/acme/callback\n" {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(errOut, acmeSecret) {
		t.Errorf("the secret is in the command's log: %q", errOut)
	}
	p, err := storedProvider(t, dsn, box, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if p.ClientSecret != acmeSecret || p.Issuer != "https://sso.acme.example" || !p.Enabled || !p.AutoCreate ||
		!slices.Equal(p.AllowedDomains, []string{"acme.example", "acme.org"}) || !slices.Equal(p.Scopes, domain.DefaultOIDCProviderScopes) {
		t.Fatalf("stored %+v", p)
	}

	t.Setenv("GITHUB_SECRET", githubSecret)
	code, out, errOut = runCLI(t, "", "idp", "create", "github", "--display-name", "GitHub", "--kind", "github",
		"--client-id", "Iv1.abc", "--client-secret-env", "GITHUB_SECRET", "--auto-create=false")
	if code != exitOK || !strings.HasPrefix(out, `created github identity provider "GitHub" (github)`) {
		t.Fatalf("create github: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if p, err := storedProvider(t, dsn, box, "github"); err != nil || p.ClientSecret != githubSecret || p.AutoCreate ||
		p.APIURL != domain.GitHubAPIURL {
		t.Fatalf("stored %+v, %v", p, err)
	}

	code, out, errOut = runCLI(t, "", "identity-providers", "list")
	if code != exitOK || !strings.HasPrefix(out, "SLUG") || !strings.Contains(out, "https://sso.acme.example") ||
		!strings.Contains(out, domain.GitHubAPIURL) || !strings.Contains(out, "acme.example,acme.org") {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// An update keeps what its flags do not name, the secret too.
	code, out, errOut = runCLI(t, "", "identity-providers", "update", "acme", "--enabled=false", "--allowed-domain", "")
	if code != exitOK || out != "updated identity provider acme (disabled; scopes openid,email,profile)\n" {
		t.Fatalf("update: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if p, err := storedProvider(t, dsn, box, "acme"); err != nil || p.ClientSecret != acmeSecret || p.Enabled ||
		len(p.AllowedDomains) != 0 || p.DisplayName != "Acme SSO" {
		t.Fatalf("after update: %+v, %v", p, err)
	}
	code, out, errOut = runCLI(t, newSecret+"\n", "identity-providers", "update", "acme", "--client-secret-stdin")
	if code != exitOK || strings.Contains(out+errOut, newSecret) {
		t.Fatalf("update of the secret: exit %d, stderr %q", code, errOut)
	}
	if p, err := storedProvider(t, dsn, box, "acme"); err != nil || p.ClientSecret != newSecret {
		t.Fatalf("after update of the secret: %+v, %v", p, err)
	}

	code, out, errOut = runCLI(t, "", "identity-providers", "delete", "acme")
	if code != exitOK || out != "deleted identity provider acme\n" {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := storedProvider(t, dsn, box, "acme"); err == nil {
		t.Error("the provider is still stored")
	}
	code, _, errOut = runCLI(t, "", "identity-providers", "delete", "acme")
	if code != exitFailure || !strings.Contains(errOut, "userd: identity-providers delete: no identity provider has this slug") {
		t.Errorf("delete again: exit %d, stderr %q", code, errOut)
	}

	// The operator's changes are in the audit trail, without an actor
	// and without a secret; the output never held one.
	var trail []string
	for _, e := range auditEvents(t, dsn) {
		if strings.HasPrefix(e, "identity_provider.") {
			trail = append(trail, e)
		}
		for _, s := range []string{acmeSecret, githubSecret, newSecret} {
			if strings.Contains(e, s) {
				t.Errorf("audit event %q holds a secret", e)
			}
		}
	}
	want := []string{
		"identity_provider.created provider=acme kind=oidc",
		"identity_provider.created provider=github kind=github",
		"identity_provider.updated provider=acme fields=allowedDomains,enabled",
		"identity_provider.updated provider=acme fields=clientSecret",
		"identity_provider.deleted provider=acme",
	}
	if !slices.Equal(trail, want) {
		t.Errorf("trail\n  %q\nwant\n  %q", trail, want)
	}
}

func TestRun_identity_providers_refusals(t *testing.T) {
	providersDB(t)
	t.Setenv("EMPTY_SECRET", "")
	create := []string{"create", "acme", "--display-name", "Acme", "--kind", "oidc", "--issuer", "https://sso.acme.example",
		"--client-id", "userd"}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no_secret", "", create, exitUsage, "the client secret is required: --client-secret-stdin or --client-secret-env NAME"},
		{"secret_as_a_flag", "", append(slices.Clone(create), "--client-secret", "s3cr3t"), exitUsage, "unknown flag: --client-secret"},
		{"both_secrets", "x\n", append(slices.Clone(create), "--client-secret-stdin", "--client-secret-env", "X"), exitUsage, "not both"},
		{"empty_stdin", "", append(slices.Clone(create), "--client-secret-stdin"), exitFailure, "no client secret on standard input"},
		{"empty_env", "", append(slices.Clone(create), "--client-secret-env", "EMPTY_SECRET"), exitFailure, "EMPTY_SECRET (--client-secret-env) is not set or empty"},
		{"http_issuer", "s\n", []string{"create", "acme", "--display-name", "Acme", "--kind", "oidc", "--issuer", "http://sso.acme.example",
			"--client-id", "userd", "--client-secret-stdin"}, exitFailure, "userd: identity-providers create: validation failed: issuer: must be https"},
		{"no_issuer", "s\n", []string{"create", "acme", "--display-name", "Acme", "--kind", "oidc", "--client-id", "userd",
			"--client-secret-stdin"}, exitFailure, "issuer: is required for an oidc provider"},
		{"no_kind", "", []string{"create", "acme", "--display-name", "Acme", "--client-id", "userd"}, exitUsage, `required flag(s) "kind" not set`},
		{"bad_slug", "", []string{"create", "Acme"}, exitUsage, `"Acme" is not a provider's slug`},
		{"no_slug", "", []string{"delete"}, exitUsage, "expected one SLUG, got 0 arguments"},
		{"update_unknown", "", []string{"update", "nobody", "--enabled=false"}, exitFailure, "no identity provider has this slug"},
		{"list_argument", "", []string{"list", "all"}, exitUsage, `unexpected argument "all"`},
		{"unknown_subcommand", "", []string{"show"}, exitUsage, `unknown subcommand "show": expected create, list, update or delete`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.stdin, append([]string{"identity-providers"}, tc.args...)...)
			if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, tc.code, tc.want)
			}
		})
	}
	// A slug registered twice.
	args := append(slices.Clone(create), "--client-secret-stdin")
	if code, _, errOut := runCLI(t, "s\n", append([]string{"identity-providers"}, args...)...); code != exitOK {
		t.Fatalf("create: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut := runCLI(t, "s\n", append([]string{"identity-providers"}, args...)...)
	if code != exitFailure || !strings.Contains(errOut, "userd: identity-providers create: an identity provider has this slug already") {
		t.Errorf("create again: exit %d, stderr %q", code, errOut)
	}
}

func TestRun_identity_providers_refuse_memory(t *testing.T) {
	t.Setenv("USERD_DB_DRIVER", "memory")
	if code, _, errOut := runCLI(t, "", "idp", "list"); code != exitFailure || !strings.Contains(errOut, "memory keeps nothing") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
