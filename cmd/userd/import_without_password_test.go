package main

import (
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// Lines without a password hash, in both formats, make accounts without a
// password; the summary counts them.
func TestImport_lines_without_a_password(t *testing.T) {
	for _, c := range []struct{ format, text string }{
		{formatCSV, "name,email,password_hash,profiles\n" +
			"Ada,ada@example.com,,ROLE_CUSTOMER\n" +
			"Bea,bea@example.com,\"" + importHash() + "\",ROLE_CUSTOMER\n" +
			"Cy,cy@example.com,  ,ROLE_CUSTOMER\n"},
		{formatJSONL, `{"name":"Ada","email":"ada@example.com","profiles":["ROLE_CUSTOMER"]}` + "\n" +
			`{"name":"Bea","email":"bea@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"]}` + "\n" +
			`{"name":"Cy","email":"cy@example.com","passwordHash":"","profiles":["ROLE_CUSTOMER"]}` + "\n"},
	} {
		t.Run(c.format, func(t *testing.T) {
			dsn := importDB(t)
			code, out, errOut := runCLI(t, c.text, "users", "import", "--format", c.format, "-")
			if code != exitOK {
				t.Fatalf("code %d, stderr:\n%s", code, errOut)
			}
			checkSummary(t, out, 3, 3, 0, 0)
			if !strings.Contains(out, ", 2 without a password: they sign in by reset, email code or a provider, in ") {
				t.Errorf("the summary does not count the accounts without a password: %q", out)
			}
			hashes := map[domain.Email]string{}
			for _, u := range storedUsers(t, dsn) {
				hashes[u.Email] = u.PasswordHash
			}
			if len(hashes) != 3 || hashes["ada@example.com"] != "" || hashes["cy@example.com"] != "" ||
				hashes["bea@example.com"] != importHash() {
				t.Errorf("stored hashes %q", hashes)
			}
		})
	}
}
