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
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/userdbin"
	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var binary string

func TestMain(m *testing.M) { os.Exit(userdbin.RunTests(m, "userd-mfaflow-", &binary)) }

const userPassword = "second-Factor-Passphrase-9"

// tool returns the path of an external program the test needs: skipped
// without it, failed in CI, where .ci/run installs it.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI (.ci/run installs it): %v", name, err)
		}
		t.Skipf("%s is not installed: test skipped (apt-get install %s)", name, pkg)
	}
	return bin
}

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

// reply is an HTTP answer with its body read.
type reply struct {
	status int
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
func send(t *testing.T, method, url string, body any, token string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = res.Body.Close() }() // read to the end below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: res.StatusCode, body: b}
}

// want fails the test unless r has the status, and decodes its body into
// v (when not nil).
func want(t *testing.T, what string, r reply, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, r.body)
		}
	}
}

// register creates a customer through open registration.
func register(t *testing.T, base, email string) {
	t.Helper()
	want(t, "register "+email, send(t, http.MethodPost, base+"/api/users",
		map[string]string{"name": "Second Factor", "email": email, "password": userPassword}, ""), http.StatusCreated, nil)
}

// tokens is the part of a token response the tests use.
type tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
}

// claims are the access token's claims about the sign-in.
type claims struct {
	Sub      string   `json:"sub"`
	SID      string   `json:"sid"`
	AuthTime int64    `json:"auth_time"`
	AMR      []string `json:"amr"`
	ACR      string   `json:"acr"`
}

// claimsOf reads the payload of a JWT; userd checks the signature, the
// test reads what it says.
func claimsOf(t *testing.T, jwt string) claims {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var c claims
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("JWT payload: %v in %s", err, b)
	}
	return c
}

// wantSignIn checks the amr and acr of an access token.
func wantSignIn(t *testing.T, what, jwt string, amr []string, acr string) {
	t.Helper()
	c := claimsOf(t, jwt)
	if !slices.Equal(c.AMR, amr) || c.ACR != acr {
		t.Errorf("%s: amr %q acr %q, want %q %q", what, c.AMR, c.ACR, amr, acr)
	}
	if c.SID == "" || c.AuthTime == 0 {
		t.Errorf("%s: sid %q auth_time %d, want both set", what, c.SID, c.AuthTime)
	}
}
