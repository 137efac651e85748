package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/config"
)

func testConfig(t *testing.T, env map[string]string) config.Config {
	t.Helper()
	cfg, err := config.LoadFrom(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func TestServerOptions_validate_for_every_driver(t *testing.T) {
	for _, driver := range []string{"sqlite", "postgres", "memory"} {
		t.Run(driver, func(t *testing.T) {
			cfg := testConfig(t, map[string]string{"USERD_DB_DRIVER": driver})
			if err := fx.ValidateApp(serverOptions(cfg, io.Discard)); err != nil {
				t.Fatalf("fx graph invalid: %v", err)
			}
		})
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
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
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("readyz = %d", resp.StatusCode)
			}
			body := strings.NewReader(`{"email":"root@example.com","password":"a very long secret"}`)
			resp, err = http.Post("http://"+addr+"/auth/login", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
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
		{name: "admin_create_without_email", args: []string{"admin", "create"}, wantCode: 2, wantOut: "--email is required"},
		{name: "admin_create_without_password", args: []string{"admin", "create", "--email", "a@example.com"}, wantCode: 1, wantOut: "no password on stdin"},
		{name: "migrate_bad_action", args: []string{"migrate", "sideways"}, wantCode: 2, wantOut: "expected up or status"},
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
