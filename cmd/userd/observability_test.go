package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/logbuf"
)

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec // G107: url is an address of the userd the test started
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// /metrics is on the main listener by default (to USERD_METRICS_ALLOW:
// the tests connect from loopback), and only on a listener of its own when
// USERD_METRICS_ADDR, or its deprecated name USERD_ADMIN_ADDR, is set;
// either way it shows the request counts, the pool of a SQL store, and the
// Go runtime and process collectors.
func TestServer_serves_metrics(t *testing.T) {
	for _, tc := range []struct {
		name, driver string
		admin        string // the variable of the metrics listener, if any
	}{
		{"main_listener_sqlite", "sqlite", ""},
		{"metrics_listener_sqlite", "sqlite", "USERD_METRICS_ADDR"},
		{"admin_listener_sqlite", "sqlite", "USERD_ADMIN_ADDR"},
		{"main_listener_memory", "memory", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			env := map[string]string{
				"USERD_DB_DRIVER": tc.driver,
				"USERD_DB_DSN":    filepath.Join(t.TempDir(), "userd.db"),
				"USERD_HTTP_ADDR": addr,
			}
			metricsAddr := addr
			if tc.admin != "" {
				metricsAddr = freeAddr(t)
				env[tc.admin] = metricsAddr
			}
			logs := &logbuf.Buffer{}
			app := fxtest.New(t, serverOptions(testConfig(t, env), logs))
			app.RequireStart()
			defer app.RequireStop()
			if deprecated := strings.Contains(logs.String(), "USERD_ADMIN_ADDR is deprecated"); deprecated != (tc.admin == "USERD_ADMIN_ADDR") {
				t.Errorf("deprecation warning logged: %v; log:\n%s", deprecated, logs)
			}

			if code, _, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
				t.Fatalf("healthz = %d", code)
			}
			code, ct, body := get(t, "http://"+metricsAddr+"/metrics")
			if code != http.StatusOK || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
				t.Fatalf("GET /metrics on %s: %d %q", metricsAddr, code, ct)
			}
			want := []string{
				`userd_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
				`userd_logins_total{result="failure"} 0`,
				"go_goroutines ", "process_resident_memory_bytes ",
			}
			if tc.driver == "sqlite" {
				want = append(want, "userd_db_open_connections 1", "userd_db_max_open_connections 1", "userd_db_wait_count_total ")
			} else if strings.Contains(body, "userd_db_") {
				t.Error("the memory store reports a connection pool")
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("the exposition lacks %q", w)
				}
			}
			if tc.admin != "" {
				if code, _, _ := get(t, "http://"+addr+"/metrics"); code != http.StatusNotFound {
					t.Errorf("GET /metrics on the main listener = %d, want 404 with %s set", code, tc.admin)
				}
				if code, _, _ := get(t, "http://"+metricsAddr+"/healthz"); code != http.StatusNotFound {
					t.Errorf("the admin listener serves /healthz: %d", code)
				}
			}
		})
	}
}

// USERD_PPROF serves the profiles on the metrics listener; without it
// they are absent there, and the main listener never serves them.
func TestServer_pprof_on_the_metrics_listener_only(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("pprof_%v", on), func(t *testing.T) {
			addr, metricsAddr := freeAddr(t), freeAddr(t)
			env := map[string]string{
				"USERD_DB_DRIVER": "memory", "USERD_HTTP_ADDR": addr, "USERD_METRICS_ADDR": metricsAddr,
				// Even to a client the main listener would show /metrics to.
				"USERD_METRICS_ALLOW": "0.0.0.0/0,::/0",
			}
			if on {
				env["USERD_PPROF"] = "true"
			}
			app := fxtest.New(t, serverOptions(testConfig(t, env), io.Discard))
			app.RequireStart()
			defer app.RequireStop()

			for _, path := range []string{"/debug/pprof/", "/debug/pprof/allocs", "/debug/pprof/cmdline"} {
				code, _, body := get(t, "http://"+metricsAddr+path)
				if on && (code != http.StatusOK || body == "") {
					t.Errorf("GET %s on the metrics listener with USERD_PPROF: %d", path, code)
				}
				if !on && code != http.StatusNotFound {
					t.Errorf("GET %s on the metrics listener without USERD_PPROF: %d, want 404", path, code)
				}
				if code, _, _ := get(t, "http://"+addr+path); code != http.StatusNotFound {
					t.Errorf("GET %s on the main listener: %d, want 404", path, code)
				}
			}
		})
	}
}

// A client outside USERD_METRICS_ALLOW gets a 404 on the main listener;
// the tests' loopback is outside this list.
func TestServer_metrics_allow_list(t *testing.T) {
	addr := freeAddr(t)
	app := fxtest.New(t, serverOptions(testConfig(t, map[string]string{
		"USERD_DB_DRIVER": "memory", "USERD_HTTP_ADDR": addr, "USERD_METRICS_ALLOW": "10.0.0.0/8",
	}), io.Discard))
	app.RequireStart()
	defer app.RequireStop()
	if code, ct, _ := get(t, "http://"+addr+"/metrics"); code != http.StatusNotFound || ct != "application/problem+json" {
		t.Fatalf("GET /metrics from outside the allow-list: %d %q", code, ct)
	}
}

// The login of the bootstrap admin lands in the audit table, and
// `userd keys rotate` records a key rotation there.
func TestAuditTrail_of_serve_and_keys_rotate(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	addr := freeAddr(t)
	cfg := testConfig(t, map[string]string{
		"USERD_DB_DSN":                   dsn,
		"USERD_HTTP_ADDR":                addr,
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    "root@example.com",
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": "a very long secret",
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
	})
	app := fxtest.New(t, serverOptions(cfg, io.Discard))
	app.RequireStart()
	resp, err := http.Post("http://"+addr+"/auth/login", "application/json",
		strings.NewReader(`{"email":"root@example.com","password":"wrong but long enough"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	// The application's hasher is the counted one.
	if _, _, body := get(t, "http://"+addr+"/metrics"); !strings.Contains(body, `userd_password_hashing_total{op="verify",result="done"} 1`) {
		t.Errorf("the login's password check is not counted:\n%s", grepLines(body, "userd_password_hashing_total"))
	}
	app.RequireStop()

	code, out, errOut := runCLI(t, "", "keys", "rotate")
	if code != 0 {
		t.Fatalf("keys rotate: code %d: %s%s", code, out, errOut)
	}
	// One line for each key added: the access-token key, then the OpenID
	// provider's (on by default).
	kid, rsaKID := strings.Fields(out)[3], ""
	if lines := strings.Split(out, "\n"); len(lines) > 2 && len(strings.Fields(lines[2])) > 3 {
		rsaKID = strings.Fields(lines[2])[3]
	}

	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	events, err := gormstore.NewAuditLog(db).List(context.Background(), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		got = append(got, string(e.Type)+" "+e.Detail)
	}
	want := []string{
		"user.created profiles=ROLE_ADMIN origin=operator",
		"login.failed via=login reason=wrong_password",
		"key.rotated kid=" + kid + " algorithm=EdDSA origin=operator",
		"key.rotated kid=" + rsaKID + " algorithm=RS256 origin=operator",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit trail:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if failed := events[1]; failed.ClientIP != "127.0.0.1" || failed.RequestID == "" || failed.SubjectID != events[0].SubjectID {
		t.Errorf("failed login %+v", failed)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
