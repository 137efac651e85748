package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Building the app touches no database: the SQLite file and its key file
// appear at start, migrated, and a database that cannot be opened fails
// the start, not the build.
func TestDatabase_opens_at_start(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "userd.db")
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": path})
	var stores ports.Stores
	app := fxtest.New(t, fx.NopLogger, baseModule(cfg, io.Discard), storeModule(cfg), fx.Invoke(startCommand), fx.Populate(&stores))
	for _, file := range []string{path, filepath.Join(dir, keyFileName)} {
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s exists before start (stat: %v)", file, err)
		}
	}
	app.RequireStart()
	if _, err := stores.Users.ByEmail(t.Context(), "nobody@example.com"); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("ByEmail on the migrated database = %v, want ErrUserNotFound", err)
	}
	app.RequireStop()

	cfg = testConfig(t, map[string]string{"USERD_DB_DSN": filepath.Join(dir, "missing", "userd.db")})
	var db *gormstore.DB
	bad := fx.New(fx.NopLogger, baseModule(cfg, io.Discard), databaseModule, fx.Populate(&db))
	if err := bad.Err(); err != nil {
		t.Fatalf("building the app failed on a database it should not have opened: %v", err)
	}
	if err := bad.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "open sqlite database") {
		t.Fatalf("start = %v, want the open error", err)
	}
}

// withApp starts the app, runs the command, and stops the app whether the
// command succeeds or not.
func TestWithApp_starts_runs_and_stops(t *testing.T) {
	cfg := testConfig(t, nil)
	for _, fail := range []bool{false, true} {
		var events []string
		hook := fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { events = append(events, "start"); return nil },
				OnStop:  func(context.Context) error { events = append(events, "stop"); return nil },
			})
		})
		boom := errors.New("boom")
		err := withApp(t.Context(), cfg, hook, func(context.Context) error {
			events = append(events, "run")
			if fail {
				return boom
			}
			return nil
		})
		if fail != errors.Is(err, boom) || (!fail && err != nil) {
			t.Errorf("fail=%v: withApp = %v", fail, err)
		}
		if got := strings.Join(events, ","); got != "start,run,stop" {
			t.Errorf("fail=%v: %s, want start,run,stop", fail, got)
		}
	}
}

// newListener builds both servers, the API's and the metrics one: the same
// limits, listening at start, shutting down at stop.
func TestListener_serves_and_stops(t *testing.T) {
	cfg := testConfig(t, map[string]string{
		"USERD_READ_HEADER_TIMEOUT": "3s", "USERD_READ_TIMEOUT": "7s",
		"USERD_WRITE_TIMEOUT": "11s", "USERD_IDLE_TIMEOUT": "13s",
	})
	lc := fxtest.NewLifecycle(t)
	addr := freeAddr(t)
	srv := newListener(lc, cfg, slog.New(slog.DiscardHandler), listener{
		name: "test", setting: "TEST_ADDR", addr: addr,
		handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
	})
	if srv.ReadHeaderTimeout != cfg.ReadHeaderTimeout || srv.ReadTimeout != cfg.ReadTimeout ||
		srv.WriteTimeout != cfg.WriteTimeout || srv.IdleTimeout != cfg.IdleTimeout ||
		srv.MaxHeaderBytes != 32<<10 || srv.ErrorLog == nil {
		t.Fatalf("server limits not set from the configuration: %+v", srv)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		_ = conn.Close()
		t.Fatal("the server listens before start")
	}
	lc.RequireStart()
	if code, _, body := get(t, "http://"+addr+"/"); code != http.StatusOK || body != "ok" {
		t.Fatalf("GET = %d %q", code, body)
	}
	lc.RequireStop()
	if conn, err := net.Dial("tcp", addr); err == nil {
		_ = conn.Close()
		t.Fatal("the server still listens after stop")
	}
}

// A taken port fails the start of either listener, naming its setting,
// and `userd` alone is `userd serve`.
func TestListener_taken_port_fails_start(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, taken)
	for _, tc := range []struct{ setting, other string }{
		{"USERD_HTTP_ADDR", "USERD_METRICS_ADDR"},
		{"USERD_METRICS_ADDR", "USERD_HTTP_ADDR"},
		{"USERD_ADMIN_ADDR", "USERD_HTTP_ADDR"},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", "off") // or serve would set this process's limit
			t.Setenv("GOGC", "100")       // and its GC percent
			t.Setenv("USERD_DB_DRIVER", "memory")
			t.Setenv(tc.setting, taken.Addr().String())
			t.Setenv(tc.other, freeAddr(t))
			code, out, errOut := runCLI(t, "")
			if code != exitFailure || out != "" || !strings.Contains(errOut, "userd: ") ||
				!strings.Contains(errOut, "listen on "+taken.Addr().String()+" ("+tc.setting+")") {
				t.Fatalf("code %d, stdout %q, stderr:\n%s", code, out, errOut)
			}
		})
	}
}

// The links of the messages open the pages that adapters/web serves.
func TestLinks_open_the_pages_userd_serves(t *testing.T) {
	if config.VerifyEmailPath != web.VerifyEmailPath || config.ResetPasswordPath != web.ResetPasswordPath {
		t.Errorf("config links %s, %s; web pages %s, %s", config.VerifyEmailPath, config.ResetPasswordPath,
			web.VerifyEmailPath, web.ResetPasswordPath)
	}
}

// TestRunInBackground_a_stop_out_of_time_names_the_loop: a shutdown that
// runs out of time says which loop held it, not a bare "context deadline
// exceeded".
func TestRunInBackground_a_stop_out_of_time_names_the_loop(t *testing.T) {
	t.Parallel()
	lc := fxtest.NewLifecycle(t)
	release := make(chan struct{})
	runInBackground(lc, "housekeeping", func(context.Context) error { return nil }, func(context.Context) {
		<-release // a loop that does not hear its context in time
	})
	if err := lc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := lc.Stop(ctx)
	close(release)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "housekeeping still running") {
		t.Fatalf("stop: %v, want the deadline, naming the loop", err)
	}
}
