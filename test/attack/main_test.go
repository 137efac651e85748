// Package attack attacks the running userd binary the way an attacker
// would, one test per finding of the security review (issue 12): each
// starts real userd processes (test/userdproc) and talks to them over HTTP
// or reads what they leave on disk. Tests that need PostgreSQL use
// USERD_TEST_POSTGRES_DSN (required when CI=true).
package attack

import (
	"os"
	"testing"

	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var binary string

const (
	adminEmail    = "root@example.com"
	adminPassword = "root-Passphrase-42"
	userPassword  = "attack-Passphrase-7"
)

// TestMain builds the binary of this tree, or takes USERD_ATTACK_BINARY
// when set: an older build, to show that an attack succeeded before its
// fix (the tests then fail).
func TestMain(m *testing.M) {
	if bin := os.Getenv("USERD_ATTACK_BINARY"); bin != "" {
		binary = bin
		os.Exit(m.Run())
	}
	os.Exit(userdproc.RunTests(m, "userd-attack-", &binary))
}

// baseEnv is the configuration a test starts from: a bootstrap admin,
// cheap password hashing, warnings only in the log.
func baseEnv(dir string) map[string]string {
	return map[string]string{
		"USERD_DB_DSN":                   dir + "/userd.db",
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
		"USERD_LOG_LEVEL":                "warn",
		// The .eml files of the messages (no USERD_SMTP_URL): in dir, not
		// in the package's directory, where they would hold live links.
		"USERD_MAIL_DIR": dir + "/mail",
	}
}
