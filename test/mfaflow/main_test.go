// Package mfaflow signs in with second factors end to end, from outside:
// the real userd binary (test/userdproc) with its SQLite database, TOTP
// codes made by OATH Toolkit's oathtool (an implementation of RFC 6238
// that shares nothing with userd's), the enrolment QR code read back by
// ZBar's zbarimg, and passkeys made by the virtual authenticator of a
// real headless Chromium, in which a page of another origin also calls
// userd with CORS and the refresh cookie (cors_test.go). Each tool
// missing skips its test, or fails it when CI=true.
package mfaflow

import (
	"os"
	"slices"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var binary string

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-mfaflow-", &binary)) }

const userPassword = "second-Factor-Passphrase-9"

// startUserd starts the binary with a scratch SQLite database, cheap
// password hashing and the extra settings of env.
func startUserd(t *testing.T, env map[string]string) *userdproc.Node {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{
		"USERD_DB_DRIVER":         "sqlite",
		"USERD_DB_DSN":            dir + "/userd.db",
		"USERD_ARGON2_MEMORY_KIB": "64",
		"USERD_ARGON2_ITERATIONS": "1",
		"USERD_LOG_LEVEL":         "warn",
	}
	for k, v := range env {
		all[k] = v
	}
	n := userdproc.New(t, binary, all)
	n.Start()
	return n
}

// register creates a customer through open registration.
func register(t *testing.T, base, email string) {
	t.Helper()
	kit.Register(t, base, "Second Factor", email, userPassword)
}

// wantSignIn checks the amr and acr of an access token.
func wantSignIn(t *testing.T, what, jwt string, amr []string, acr string) {
	t.Helper()
	c := kit.ClaimsOf(t, jwt)
	if !slices.Equal(c.AMR, amr) || c.ACR != acr {
		t.Errorf("%s: amr %q acr %q, want %q %q", what, c.AMR, c.ACR, amr, acr)
	}
	if c.SID == "" || c.AuthTime == 0 {
		t.Errorf("%s: sid %q auth_time %d, want both set", what, c.SID, c.AuthTime)
	}
}
