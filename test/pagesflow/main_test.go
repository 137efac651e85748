// Package pagesflow drives the admin console and the account page end to
// end, as people use them: the real userd binary (test/userdproc) with
// its SQLite database, on http://localhost, and a real headless Chromium
// (test/chromium) that types, clicks and presses keys. TOTP codes come
// from the test's own RFC 6238 generator, the enrolment's QR code is read
// back by ZBar's zbarimg, and passkeys are made by Chromium's virtual
// authenticator. Every page it meets passes the browser kit's CheckPage:
// axe-core finds no WCAG 2.1 A or AA violation, light and dark, desktop
// and phone, nothing overflows a 375 px screen, and the screenshots in
// docs/img are taken (USERD_UPDATE_SCREENSHOTS=1 rewrites them). What
// the pages did is checked through the API.
package pagesflow

import (
	"bytes" //nolint:gosec // G505: RFC 6238's TOTP is HMAC-SHA-1, as authenticator apps compute it
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/totpgen"
	"github.com/userd/userd/test/userdbin"
	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var userdBinary string

func TestMain(m *testing.M) { os.Exit(userdbin.RunTests(m, "userd-pagesflow-", &userdBinary)) }

const (
	adminEmail    = "root@example.com"
	adminPassword = "console-Admin-Passphrase-3"
	userPassword  = "account-Page-Passphrase-5"
)

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

// server is a running userd and the origin the browser reaches it at.
type server struct {
	node   *userdproc.Node
	origin string
}

// startUserd starts the binary on http://localhost:<a free port>, the
// origin of its pages and of its passkeys (rp id localhost), with a
// bootstrap admin, a scratch SQLite database and cheap password hashing.
func startUserd(t *testing.T, extra ...map[string]string) server {
	t.Helper()
	addr := userdproc.FreeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://localhost:" + port
	dir := t.TempDir()
	env := map[string]string{
		"USERD_HTTP_ADDR":                addr,
		"USERD_PUBLIC_URL":               origin,
		"USERD_WEBAUTHN_RP_ID":           "localhost",
		"USERD_WEBAUTHN_ORIGINS":         origin,
		"USERD_DB_DRIVER":                "sqlite",
		"USERD_DB_DSN":                   dir + "/userd.db",
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
		"USERD_LOG_LEVEL":                "warn",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
	}
	for _, e := range extra {
		maps.Copy(env, e)
	}
	n := userdproc.New(t, userdBinary, env)
	n.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("userd's log:\n%s", n.Log.String())
		}
	})
	return server{node: n, origin: origin}
}

// reply is an HTTP answer with its body read.
type reply struct {
	status int
	body   []byte
}

var client = &http.Client{Timeout: 30 * time.Second}

// api makes a request to the API with a JSON body (nil for none) and an
// optional bearer token.
func (s server) api(t *testing.T, method, path string, body any, token string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.node.Base+path, rd)
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
		t.Fatalf("%s %s: %v", method, path, err)
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

// tokens is the part of a token response the tests use.
type tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	MFAToken     string `json:"mfaToken"`
}

// login signs in through the API and returns the tokens.
func (s server) login(t *testing.T, email, password string) tokens {
	t.Helper()
	var tok tokens
	want(t, "login "+email, s.api(t, http.MethodPost, "/auth/login",
		map[string]string{"email": email, "password": password}, ""), http.StatusOK, &tok)
	return tok
}

// register creates a customer through open registration and returns its id.
func (s server) register(t *testing.T, name, email string) string {
	t.Helper()
	var u struct {
		ID string `json:"id"`
	}
	want(t, "register "+email, s.api(t, http.MethodPost, "/api/users",
		map[string]string{"name": name, "email": email, "password": userPassword}, ""), http.StatusCreated, &u)
	return u.ID
}

// totpCode is the test's own RFC 6238 generator (HMAC-SHA-1, 6 digits,
// 30 s steps), sharing nothing with userd's: the code an authenticator
// app shows at a time.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totpgen.Code(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// totpFactor is a confirmed TOTP factor: its secret, and when the code
// that confirmed it was made.
type totpFactor struct {
	secret      string
	confirmedAt time.Time
}

// nextCode is a code that the factor has not used: that of the time step
// after the confirmation's, which userd accepts (±1 step) from the
// confirmation until a minute after it.
func (f totpFactor) nextCode(t *testing.T) string {
	t.Helper()
	return totpCode(t, f.secret, f.confirmedAt.Add(30*time.Second))
}

// enrolTOTP gives the account a TOTP factor through the API.
func (s server) enrolTOTP(t *testing.T, email, password string) totpFactor {
	t.Helper()
	tok := s.login(t, email, password)
	var enrol struct {
		Secret string `json:"secret"`
	}
	want(t, "begin TOTP", s.api(t, http.MethodPost, "/api/users/me/mfa/totp",
		map[string]string{"currentPassword": password}, tok.AccessToken), http.StatusCreated, &enrol)
	now := time.Now()
	want(t, "confirm TOTP", s.api(t, http.MethodPost, "/api/users/me/mfa/totp/confirm",
		map[string]string{"code": totpCode(t, enrol.Secret, now)}, tok.AccessToken), http.StatusOK, nil)
	return totpFactor{secret: enrol.Secret, confirmedAt: now}
}

// claims are the access token's claims the tests read.
type claims struct {
	Sub string `json:"sub"`
	SID string `json:"sid"`
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
