// Package attack attacks the running userd binary the way an attacker
// would, one test per finding of the security review (issue 12): each
// starts real userd processes (test/userdproc) and talks to them over HTTP
// or reads what they leave on disk. Tests that need PostgreSQL use
// USERD_TEST_POSTGRES_DSN (required when CI=true).
package attack

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/userd/userd/test/userdbin"
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
	os.Exit(userdbin.RunTests(m, "userd-attack-", &binary))
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

// reply is an HTTP answer with its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// code is the problem code of a problem+json answer, "" otherwise.
func (r reply) code() string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.body, &p) // not a problem: no code
	return p.Code
}

var client = &http.Client{Timeout: 30 * time.Second}

// send makes a request with a JSON body (nil for none) and an optional
// bearer token.
func send(t testing.TB, method, url string, body any, token string) reply {
	t.Helper()
	return sendWith(t, method, url, body, token, nil)
}

// tokens is the part of a token response the tests use.
type tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	User         struct {
		ID string `json:"id"`
	} `json:"user"`
}

// login signs in and fails the test unless it succeeds.
func login(t testing.TB, base, email, password string) tokens {
	t.Helper()
	r := send(t, http.MethodPost, base+"/auth/login", map[string]string{"email": email, "password": password}, "")
	if r.status != http.StatusOK {
		t.Fatalf("login %s: %d %s", email, r.status, r.body)
	}
	var tok tokens
	if err := json.Unmarshal(r.body, &tok); err != nil {
		t.Fatal(err)
	}
	return tok
}
