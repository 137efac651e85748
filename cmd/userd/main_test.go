package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/config"
	"github.com/userd/userd/test/logbuf"
)

func testConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	if _, ok := env["USERD_MAIL_DIR"]; !ok {
		// Messages go to the test's directory, never into the checkout.
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["USERD_MAIL_DIR"] = t.TempDir()
	}
	cfg, err := config.LoadFrom(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func TestServerOptions_validate_for_every_driver(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres", "mysql", "memory"} {
		t.Run(driver, func(t *testing.T) {
			env := map[string]string{"USERD_DB_DRIVER": driver}
			if driver == "mysql" {
				env["USERD_DB_DSN"] = "userd@tcp(127.0.0.1:3306)/userd"
			}
			cfg := testConfig(t, env)
			if err := fx.ValidateApp(serverOptions(cfg, io.Discard)); err != nil {
				t.Fatalf("fx graph invalid: %v", err)
			}
		})
	}
}

// mustClose closes c and fails the test, without stopping it, when Close
// fails; meant for defer.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// The address is handed out as free: the port must be released.
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// The whole app starts and stops over each embedded backend, serves
// requests, and bootstraps the configured admin.
func TestServer_starts_serves_and_stops(t *testing.T) {
	for _, driver := range []string{"memory", "sqlite"} {
		t.Run(driver, func(t *testing.T) {
			addr := freeAddr(t)
			var logs bytes.Buffer
			cfg := testConfig(t, map[string]string{
				"USERD_DB_DRIVER":                driver,
				"USERD_DB_DSN":                   filepath.Join(t.TempDir(), "userd.db"),
				"USERD_HTTP_ADDR":                addr,
				"USERD_BOOTSTRAP_ADMIN_EMAIL":    "root@example.com",
				"USERD_BOOTSTRAP_ADMIN_PASSWORD": "a very long secret",
				"USERD_ARGON2_MEMORY_KIB":        "64",
				"USERD_ARGON2_ITERATIONS":        "1",
			})
			app := fxtest.New(t, serverOptions(cfg, &logs))
			app.RequireStart()
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("readyz = %d", resp.StatusCode)
			}
			body := strings.NewReader(`{"email":"root@example.com","password":"a very long secret"}`)
			resp, err = http.Post("http://"+addr+"/auth/login", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("bootstrap admin login = %d", resp.StatusCode)
			}
			app.RequireStop()
			if strings.Contains(logs.String(), "a very long secret") || strings.Contains(logs.String(), "$argon2id$") {
				t.Fatal("a secret reached the logs")
			}
			if driver == "memory" && !strings.Contains(logs.String(), "nothing is kept across restarts") {
				t.Fatal("memory driver did not warn that it keeps nothing")
			}
		})
	}
}

func TestRun_commands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
	}{
		{name: "version", args: []string{"version"}, wantOut: "userd dev"},
		{name: "help", args: []string{"--help"}, wantOut: "Usage:"},
		{name: "unknown_command", args: []string{"frobnicate"}, wantCode: 2, wantOut: "unknown command"},
		{name: "admin_without_subcommand", args: []string{"admin"}, wantCode: 2, wantOut: "expected the subcommand create"},
		{name: "admin_create_without_email", args: []string{"admin", "create"}, wantCode: 2, wantOut: `required flag(s) "email" not set`},
		{name: "admin_create_without_password", args: []string{"admin", "create", "--email", "a@example.com"}, wantCode: 1, wantOut: "no password on stdin"},
		{name: "migrate_bad_action", args: []string{"migrate", "sideways"}, wantCode: 2, wantOut: "expected up or status"},
		{name: "keys_without_subcommand", args: []string{"keys"}, wantCode: 2, wantOut: "expected rotate or list"},
		{name: "keys_bad_subcommand", args: []string{"keys", "delete"}, wantCode: 2, wantOut: "expected rotate or list"},
		{name: "help_mentions_keys", args: []string{"help"}, wantOut: "userd keys rotate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			code := run(tc.args, strings.NewReader(tc.stdin), &out, &out)
			if code != tc.wantCode || !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("code %d, output %q; want %d and %q", code, out.String(), tc.wantCode, tc.wantOut)
			}
		})
	}
}

func TestRun_admin_create_and_migrate_on_sqlite(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	t.Setenv("USERD_ARGON2_MEMORY_KIB", "64")
	t.Setenv("USERD_ARGON2_ITERATIONS", "1")
	var out bytes.Buffer
	if code := run([]string{"admin", "create", "--email", "Boss@Example.com", "--name", "Boss"},
		strings.NewReader("a very long secret\n"), &out, &out); code != 0 {
		t.Fatalf("admin create: code %d: %s", code, out.String())
	}
	if !strings.Contains(out.String(), "created admin") || !strings.Contains(out.String(), "boss@example.com") {
		t.Fatalf("output %q", out.String())
	}
	out.Reset()
	if code := run([]string{"admin", "create", "--email", "boss@example.com"},
		strings.NewReader("a very long secret\n"), &out, &out); code != 1 || !strings.Contains(out.String(), "already registered") {
		t.Fatalf("second create: code %d: %s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"admin", "create", "--email", "weak@example.com"},
		strings.NewReader("password\n"), &out, &out); code != 1 || !strings.Contains(out.String(), "password") {
		t.Fatalf("weak password: code %d: %s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"migrate", "status"}, nil, &out, &out); code != 0 || !strings.Contains(out.String(), "applied") {
		t.Fatalf("migrate status: code %d: %s", code, out.String())
	}
}

// With auto-migration off, serve refuses an out-of-date schema until
// `userd migrate up` has run.
func TestServer_without_auto_migrate_needs_migrate_up(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "userd.db")
	env := map[string]string{
		"USERD_DB_DSN": dsn, "USERD_HTTP_ADDR": freeAddr(t), "USERD_DB_AUTO_MIGRATE": "false",
	}
	app := fx.New(serverOptions(testConfig(t, env), io.Discard))
	err := app.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "pending migrations") {
		t.Fatalf("start on an empty database = %v, want a pending-migrations error", err)
	}
	t.Setenv("USERD_DB_DSN", dsn)
	var out bytes.Buffer
	if code := run([]string{"migrate", "up"}, nil, &out, &out); code != 0 {
		t.Fatalf("migrate up: %d %s", code, out.String())
	}
	if strings.Contains(out.String(), "pending") {
		t.Fatalf("migrate up left pending steps: %s", out.String())
	}
	fxtest.New(t, serverOptions(testConfig(t, env), io.Discard)).RequireStart().RequireStop()
}

// keyRows returns the table rows of `userd keys list` output, by kid:
// kid, purpose, algorithm, signs from, status, retires.
func keyRows(t *testing.T, out string) map[string][]string {
	t.Helper()
	rows := map[string][]string{}
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "KID") {
		t.Fatalf("no table header in %q", out)
	}
	for _, line := range lines[1:] {
		if line == "" {
			break
		}
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("row %q has %d columns, want 6", line, len(f))
		}
		rows[f[0]] = f
	}
	return rows
}

// `userd keys rotate` adds a key next to the one `serve` created; `keys
// list` then shows the new one pending (published, not signing yet) and
// the old one still active. `keys rotate --now` adds one that signs at
// once.
func TestRun_keys_rotate_and_list_on_sqlite(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	// The access-token keys alone: the provider's are the next test's.
	t.Setenv("USERD_OIDC_PROVIDER", "false")

	code, out, errOut := runCLI(t, "", "keys", "list")
	if code != 0 || !strings.Contains(out, "no signing keys yet") {
		t.Fatalf("keys list on an empty database: code %d: %s%s", code, out, errOut)
	}

	// The first key, as a start of the server creates it.
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": dsn, "USERD_HTTP_ADDR": freeAddr(t), "USERD_OIDC_PROVIDER": "false"})
	fxtest.New(t, serverOptions(cfg, io.Discard)).RequireStart().RequireStop()

	code, out, errOut = runCLI(t, "", "keys", "rotate")
	if code != 0 || !strings.HasPrefix(out, "created EdDSA key") || strings.Contains(out, "RS256") || !strings.Contains(out, "publishes it within 30s and signs with it from") {
		t.Fatalf("keys rotate: code %d: %s%s", code, out, errOut)
	}
	pendingKID := strings.Fields(out)[3]
	code, out, errOut = runCLI(t, "", "keys", "list")
	if code != 0 {
		t.Fatalf("keys list: code %d: %s%s", code, out, errOut)
	}
	rows := keyRows(t, out)
	if len(rows) != 2 || rows[pendingKID] == nil || rows[pendingKID][4] != "pending" {
		t.Fatalf("the rotated key %s is not pending:\n%s", pendingKID, out)
	}
	if from, err := time.Parse(time.RFC3339, rows[pendingKID][3]); err != nil || time.Until(from) < 5*time.Minute || time.Until(from) > 6*time.Minute {
		t.Errorf("the pending key signs from %q, want about 6 minutes from now (%v)", rows[pendingKID][3], err)
	}

	code, out, errOut = runCLI(t, "", "keys", "rotate", "--now")
	if code != 0 || !strings.HasPrefix(out, "created EdDSA key") || !strings.Contains(out, "every node signs with it within 30s") {
		t.Fatalf("keys rotate --now: code %d: %s%s", code, out, errOut)
	}
	newKID := strings.Fields(out)[3]

	code, out, errOut = runCLI(t, "", "keys", "list")
	if code != 0 {
		t.Fatalf("keys list: code %d: %s%s", code, out, errOut)
	}
	rows = keyRows(t, out)
	if len(rows) != 3 {
		t.Fatalf("keys list shows %d keys, want 3:\n%s", len(rows), out)
	}
	var statuses []string
	for kid, row := range rows {
		if row[2] != "EdDSA" {
			t.Errorf("key %s has algorithm %s", kid, row[2])
		}
		if _, err := time.Parse(time.RFC3339, row[3]); err != nil {
			t.Errorf("created %q: %v", row[3], err)
		}
		statuses = append(statuses, row[4])
	}
	if rows[newKID] == nil || rows[newKID][4] != "active" || rows[pendingKID][4] != "pending" || rows[pendingKID][5] != "-" {
		t.Errorf("the rotated key %s is not the active one:\n%s", newKID, out)
	}
	slices.Sort(statuses)
	if !slices.Equal(statuses, []string{"active", "pending", "published"}) {
		t.Errorf("statuses %v, want one active, one pending and one published:\n%s", statuses, out)
	}

	// Switching to ES256 ignores the EdDSA keys until a rotation adds one.
	t.Setenv("USERD_JWT_ALGORITHM", "ES256")
	if code, out, errOut := runCLI(t, "", "keys", "rotate"); code != 0 {
		t.Fatalf("keys rotate ES256: code %d: %s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "keys", "list")
	if code != 0 {
		t.Fatalf("keys list ES256: code %d: %s%s", code, out, errOut)
	}
	statuses = nil
	for _, row := range keyRows(t, out) {
		statuses = append(statuses, row[2]+":"+row[4])
	}
	slices.Sort(statuses)
	if want := []string{"ES256:active", "EdDSA:ignored", "EdDSA:ignored", "EdDSA:ignored"}; !slices.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v:\n%s", statuses, want, out)
	}
}

func TestRun_keys_refusals(t *testing.T) {
	t.Setenv("USERD_DB_DSN", filepath.Join(t.TempDir(), "userd.db"))
	const secret = "a-configured-hmac-secret-of-40-bytes-xyz"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"memory_rotate", map[string]string{"USERD_DB_DRIVER": "memory"}, []string{"keys", "rotate"}, "USERD_DB_DRIVER=memory"},
		{"memory_list", map[string]string{"USERD_DB_DRIVER": "memory"}, []string{"keys", "list"}, "USERD_DB_DRIVER=memory"},
		{"configured_secret", map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": secret, "USERD_OIDC_PROVIDER": "false"}, []string{"keys", "rotate"}, "USERD_JWT_HMAC_SECRET"},
		{"short_secret", map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": "short-" + secret[:20]}, []string{"keys", "list"}, "USERD_JWT_HMAC_SECRET: must be at least 32 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out bytes.Buffer
			if code := run(tc.args, nil, &out, &out); code != 1 || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("code %d, output %q; want 1 and %q", code, out.String(), tc.want)
			}
			if strings.Contains(out.String(), secret[:20]) {
				t.Fatalf("output shows the secret: %q", out.String())
			}
		})
	}

	// With the configured secret, list shows its key and no secret.
	t.Setenv("USERD_JWT_ALGORITHM", "HS256")
	t.Setenv("USERD_JWT_HMAC_SECRET", secret)
	code, out, errOut := runCLI(t, "", "keys", "list")
	if code != 0 {
		t.Fatalf("keys list: code %d: %s%s", code, out, errOut)
	}
	row := keyRows(t, out)[jwtissuer.ConfiguredKID([]byte(secret))]
	if row == nil || row[2] != "HS256" || row[3] != "(USERD_JWT_HMAC_SECRET)" || row[4] != "active" {
		t.Fatalf("keys list:\n%s", out)
	}
	if strings.Contains(out+errOut, secret[:20]) {
		t.Fatalf("output shows the secret: %q", out+errOut)
	}
}

// Every algorithm works end to end: the server starts, a login yields a
// token of that algorithm that authenticates, and the JWKS fits it.
func TestServer_signs_with_each_jwt_algorithm(t *testing.T) {
	for _, tc := range []struct {
		alg, secret, kty string
	}{
		{"EdDSA", "", "OKP"},
		{"ES256", "", "EC"},
		{"HS256", "", ""},
		{"HS256", "a-configured-hmac-secret-of-40-bytes-xyz", ""},
	} {
		t.Run(tc.alg+map[bool]string{true: "_configured", false: ""}[tc.secret != ""], func(t *testing.T) {
			addr := freeAddr(t)
			var logs bytes.Buffer
			cfg := testConfig(t, map[string]string{
				"USERD_DB_DRIVER":                "memory",
				"USERD_HTTP_ADDR":                addr,
				"USERD_JWT_ALGORITHM":            tc.alg,
				"USERD_JWT_HMAC_SECRET":          tc.secret,
				"USERD_BOOTSTRAP_ADMIN_EMAIL":    "root@example.com",
				"USERD_BOOTSTRAP_ADMIN_PASSWORD": "a very long secret",
				"USERD_ARGON2_MEMORY_KIB":        "64",
				"USERD_ARGON2_ITERATIONS":        "1",
			})
			app := fxtest.New(t, serverOptions(cfg, &logs))
			app.RequireStart()
			defer app.RequireStop()

			resp, err := http.Post("http://"+addr+"/auth/login", "application/json",
				strings.NewReader(`{"email":"root@example.com","password":"a very long secret"}`))
			if err != nil {
				t.Fatal(err)
			}
			var login struct {
				AccessToken string `json:"accessToken"`
			}
			err = json.NewDecoder(resp.Body).Decode(&login)
			_ = resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("login = %d, %v", resp.StatusCode, err)
			}
			header, err := base64.RawURLEncoding.DecodeString(strings.Split(login.AccessToken, ".")[0])
			if err != nil || !strings.Contains(string(header), `"alg":"`+tc.alg+`"`) {
				t.Fatalf("token header %s, %v; want alg %s", header, err, tc.alg)
			}

			req, _ := http.NewRequest("GET", "http://"+addr+"/api/users/me", nil)
			req.Header.Set("Authorization", "Bearer "+login.AccessToken)
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("/api/users/me with the token = %d", resp.StatusCode)
			}

			resp, err = http.Get("http://" + addr + "/.well-known/jwks.json")
			if err != nil {
				t.Fatal(err)
			}
			var set struct {
				Keys []map[string]string `json:"keys"`
			}
			err = json.NewDecoder(resp.Body).Decode(&set)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			// The access-token key (none for HS256), then the OpenID
			// provider's RS256 key, there whatever the algorithm.
			var got []string
			for _, k := range set.Keys {
				got = append(got, k["kty"]+":"+k["alg"])
			}
			want := []string{"RSA:RS256"}
			if tc.kty != "" {
				want = []string{tc.kty + ":" + tc.alg, "RSA:RS256"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("JWKS = %v, want keys %v", set.Keys, want)
			}
			if tc.secret != "" && strings.Contains(logs.String(), tc.secret) {
				t.Error("the HMAC secret reached the logs")
			}
		})
	}
}

// The bootstrap admin exists before the listener opens: a client that waits
// for /readyz can log in at once (found by test/faults).
func TestServer_bootstrap_admin_before_listening(t *testing.T) {
	addr := freeAddr(t)
	var logs logbuf.Buffer
	cfg := testConfig(t, map[string]string{
		"USERD_DB_DRIVER": "memory", "USERD_HTTP_ADDR": addr,
		"USERD_BOOTSTRAP_ADMIN_EMAIL": "root@example.com", "USERD_BOOTSTRAP_ADMIN_PASSWORD": "a very long secret",
		"USERD_ARGON2_MEMORY_KIB": "64", "USERD_ARGON2_ITERATIONS": "1",
	})
	fxtest.New(t, serverOptions(cfg, &logs)).RequireStart().RequireStop()
	out := logs.String()
	created, listening := strings.Index(out, "bootstrap admin created"), strings.Index(out, "userd listening")
	if created < 0 || listening < 0 || created > listening {
		t.Fatalf("bootstrap admin created at %d, listening at %d, want created first:\n%s", created, listening, out)
	}
}
