package main

import (
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// makeTokens makes a token of each name for the user u, as u in a
// session would, through the application over the configured store.
func makeTokens(t *testing.T, u domain.User, names ...string) []application.CreatedToken {
	t.Helper()
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	var svc *application.Services
	var out []application.CreatedToken
	err = withApp(t.Context(), cfg, commandOptions(cfg, io.Discard, &svc), func(ctx context.Context) error {
		for _, name := range names {
			days := 30
			created, err := svc.Tokens.Create(ctx, &domain.Principal{UserID: u.ID, Profiles: u.Profiles}, string(u.ID),
				application.CreateTokenInput{Name: name, Scopes: []string{"users:read"}, ExpiresInDays: &days})
			if err != nil {
				return err
			}
			out = append(out, created)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// `userd tokens list` and `revoke` on SQLite: the list shows a token's
// prefix, never the token; a revoked one leaves it, and is audited
// without an actor.
func TestRun_tokens_on_sqlite(t *testing.T) {
	dsn := importDB(t)
	t.Setenv("USERD_ARGON2_MEMORY_KIB", "64")
	t.Setenv("USERD_ARGON2_ITERATIONS", "1")
	if code, out, errOut := runCLI(t, "a very long secret\n", "admin", "create", "--email", "ada@example.com"); code != exitOK {
		t.Fatalf("admin create: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	ada := storedUsers(t, dsn)[0]
	id := string(ada.ID)

	code, out, errOut := runCLI(t, "", "tokens", "list", id)
	if code != exitOK || !strings.Contains(out, "no live tokens") {
		t.Fatalf("list of none: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	tokens := makeTokens(t, ada, "Backup job", "CI")
	code, out, errOut = runCLI(t, "", "tokens", "list", id)
	if code != exitOK || !strings.HasPrefix(out, "TOKEN ID") {
		t.Fatalf("list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tk := range tokens {
		row := regexp.MustCompile(`(?m)^` + string(tk.ID) + `\s+` + regexp.QuoteMeta(tk.Name) + `\s+udp_` + tk.Prefix +
			`…\s+users:read\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+never$`)
		if !row.MatchString(out) {
			t.Errorf("the list lacks the row of %s:\n%s", tk.Name, out)
		}
		if strings.Contains(out, tk.Token) || strings.Contains(out, tk.Hash) {
			t.Errorf("the list shows a token or its hash:\n%s", out)
		}
	}
	// Newest first.
	if strings.Index(out, "CI") > strings.Index(out, "Backup job") {
		t.Errorf("not newest first:\n%s", out)
	}

	code, out, errOut = runCLI(t, "", "tokens", "revoke", id, string(tokens[0].ID))
	if code != exitOK || out != "revoked token "+string(tokens[0].ID)+" of user "+id+"\n" {
		t.Fatalf("revoke: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "tokens", "list", id)
	if code != exitOK || strings.Contains(out, "Backup job") || !strings.Contains(out, "CI") {
		t.Errorf("list after the revoke:\n%s", out)
	}
	code, _, errOut = runCLI(t, "", "tokens", "revoke", id, string(tokens[0].ID))
	if code != exitFailure || !strings.Contains(errOut, "userd: tokens revoke: the user has no live token of this id") {
		t.Errorf("revoke again: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "", "tokens", "list", "0123456789abcdef01234567")
	if code != exitFailure || !strings.Contains(errOut, "userd: tokens list: no user has this id") {
		t.Errorf("list of an unknown user: exit %d, stderr %q", code, errOut)
	}

	var revoked []string
	for _, e := range auditEvents(t, dsn) {
		if strings.HasPrefix(e, "token.") {
			revoked = append(revoked, e)
		}
		for _, tk := range tokens {
			if strings.Contains(e, tk.Token) {
				t.Errorf("audit event %q holds a token", e)
			}
		}
	}
	if len(revoked) != 3 || !slices.Contains(revoked, "token.revoked token="+string(tokens[0].ID)) {
		t.Errorf("the token events: %q", revoked)
	}
}

func TestRun_tokens_usage_errors(t *testing.T) {
	importDB(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"list_without_user", []string{"tokens", "list"}, "userd: tokens list: expected USER, got 0 arguments"},
		{"list_by_email", []string{"tokens", "list", "ada@example.com"}, `"ada@example.com" is not a user id`},
		{"revoke_without_token", []string{"tokens", "revoke", "0123456789abcdef01234567"}, "expected USER and TOKEN_ID, got 1 arguments"},
		{"revoke_bad_token", []string{"tokens", "revoke", "0123456789abcdef01234567", "udp_abc"}, `"udp_abc" is not a token id`},
		{"group_alone", []string{"tokens"}, "userd: tokens: expected list or revoke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errOut, tc.want)
			}
		})
	}
}
