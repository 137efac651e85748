package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"   // also the MySQL driver, to create and drop the run's database
	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver, to create and drop the run's schema

	"github.com/userd/userd/adapters/secretbox"
)

// buildUserd compiles the service as `make build` does, into dir.
func buildUserd(ctx context.Context, dir, commit string) (string, error) {
	bin := filepath.Join(dir, "userd")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", //nolint:gosec // G204: a fixed go build of this module's cmd/userd; commit is the checkout's git hash, passed as one argument
		"-ldflags", "-s -w -X main.commit="+commit, "-o", bin, "github.com/userd/userd/cmd/userd")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build userd (run from inside the userd module, or pass --userd): %v\n%s", err, out.String())
	}
	return bin, nil
}

// server is a userd process started by the loader.
type server struct {
	base string
	// metricsBase is the metrics listener's base URL, which serves the
	// profiles too; empty unless started with profiling.
	metricsBase string
	cmd         *exec.Cmd
	exited      chan struct{} // closed when the process has exited; waitErr is set then
	waitErr     error
	logPath     string
	cleanup     []func()
	// env is the environment it was started with, for a twin's.
	env []string
}

const (
	bootstrapEmail    = "load-admin@example.com"
	bootstrapPassword = "Load-admin-passphrase-42"
)

// startUserd starts binary on a free loopback port with the backend's
// database. The environment is the caller's without any USERD_ variable,
// so that the figures are those of the defaults plus the settings below.
// With profile, /metrics and the profiles are on a second free port
// (USERD_METRICS_ADDR, USERD_PPROF).
func startUserd(ctx context.Context, binary, backend, dsn, dir, smtpURL string, argon argonParams, profile bool, extraEnv ...string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, exited: make(chan struct{}), logPath: filepath.Join(dir, "userd-"+backend+".log")}
	env := []string{}
	for _, kv := range os.Environ() {
		// Nor OTEL_: the read is priced with traces off (traced.go).
		if !strings.HasPrefix(kv, "USERD_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	if profile {
		metricsAddr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		s.metricsBase = "http://" + metricsAddr
		env = append(env, "USERD_METRICS_ADDR="+metricsAddr, "USERD_PPROF=true")
	}
	env = append(env, loadEnv(addr, dir, smtpURL, argon)...)
	env = append(env, extraEnv...)
	dbEnv, err := s.databaseEnv(ctx, backend, dsn, dir)
	if err != nil {
		return nil, err
	}
	if err := s.launch(binary, append(env, dbEnv...)); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// loadEnv is the configuration of a server under load, its database
// apart: listening on addr, sending its messages to the loader's sink,
// with the bootstrap admin, the argon2id parameters of the run and the
// relying party of the passkey scenario.
func loadEnv(addr, dir, smtpURL string, argon argonParams) []string {
	return []string{
		"USERD_HTTP_ADDR=" + addr,
		"USERD_AUTH_IP_LIMIT=0", // all load comes from 127.0.0.1
		// The mail scenarios ask for many links for few accounts: the
		// per-account budget off, every message goes to the loader's sink.
		"USERD_MAIL_MIN_INTERVAL=0", "USERD_MAIL_MAX_PER_HOUR=0",
		"USERD_SMTP_URL=" + smtpURL,
		"USERD_MAIL_DIR=" + filepath.Join(dir, "mail"), // unused with the sink; never the checkout
		"USERD_LOG_LEVEL=warn",
		"USERD_BOOTSTRAP_ADMIN_EMAIL=" + bootstrapEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD=" + bootstrapPassword,
		fmt.Sprintf("USERD_ARGON2_MEMORY_KIB=%d", argon.MemoryKiB),
		fmt.Sprintf("USERD_ARGON2_ITERATIONS=%d", argon.Iterations),
		fmt.Sprintf("USERD_ARGON2_PARALLELISM=%d", argon.Parallelism),
		// The passkey scenario's software authenticator claims this page.
		"USERD_WEBAUTHN_RP_ID=" + passkeyRPID, "USERD_WEBAUTHN_ORIGINS=" + passkeyOrigin,
	}
}

// databaseEnv is the database configuration of the backend: a file in dir
// for SQLite; a fresh schema (PostgreSQL) or database (MySQL) beside dsn,
// dropped when s stops, and a secret key for the run, which userd needs
// on either.
func (s *server) databaseEnv(ctx context.Context, backend, dsn, dir string) ([]string, error) {
	fresh := freshSchema
	switch backend {
	case "sqlite":
		return []string{"USERD_DB_DRIVER=sqlite", "USERD_DB_DSN=" + filepath.Join(dir, "userd-load.db")}, nil
	case "postgres":
	case "mysql":
		fresh = freshMySQLDatabase
	default:
		return nil, fmt.Errorf("unknown backend %q", backend)
	}
	scoped, drop, err := fresh(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, drop)
	return []string{"USERD_DB_DRIVER=" + backend, "USERD_DB_DSN=" + scoped,
		"USERD_SECRET_KEY=" + secretbox.EncodeKey(secretbox.NewKey())}, nil
}

// launch starts `binary serve` with env, its output into s's log file.
func (s *server) launch(binary string, env []string) error {
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return err
	}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env, s.env = env, env
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		_ = logFile.Close() // nothing was written to it
		return fmt.Errorf("start userd: %w", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		// The child wrote the log through its own descriptor; closing
		// ours, which only handed it over, has nothing to report.
		_ = logFile.Close()
		close(s.exited)
	}()
	return nil
}

func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("userd exited during start (%v):\n%s", s.waitErr, s.logTail(20))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			_ = res.Body.Close() // only the status matters
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("userd not ready after %v:\n%s", limit, s.logTail(20))
}

func (s *server) pid() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// stop ends the server with SIGTERM (SIGKILL after 20 s) and drops what
// the run created.
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// logTail returns the last n lines of the server's output.
func (s *server) logTail(n int) string {
	b, err := os.ReadFile(s.logPath) //nolint:gosec // G703: the server's log file, which the loader created in its temporary directory
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freshSchema creates a private schema for one run and returns the DSN
// that selects it (search_path), and a function that drops it.
func freshSchema(ctx context.Context, dsn string) (string, func(), error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "userd_load_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = db.Close() // the error that matters is the one returned
		return "", nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "userd-load: drop schema %s: %v\n", schema, err)
		}
		if err := db.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "userd-load: close the database: %v\n", err)
		}
	}
	return withSearchPath(dsn, schema), drop, nil
}

// freshMySQLDatabase creates a database for one run on the server of dsn
// and returns the DSN that selects it, and a function that drops it.
func freshMySQLDatabase(ctx context.Context, dsn string) (string, func(), error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", nil, fmt.Errorf("mysql: %w", err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("mysql: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "userd_load_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		_ = db.Close() // the error that matters is the one returned
		return "", nil, fmt.Errorf("mysql: create database: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+name); err != nil {
			fmt.Fprintf(os.Stderr, "userd-load: drop database %s: %v\n", name, err)
		}
		if err := db.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "userd-load: close the database: %v\n", err)
		}
	}
	cfg.DBName = name
	return cfg.FormatDSN(), drop, nil
}

func withSearchPath(dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return strings.TrimSpace(dsn) + " search_path=" + schema // key=value form
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", err
	}
	return addr, nil
}
