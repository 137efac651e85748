package gormstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/userd/userd/domain"
)

// New checks its arguments and touches nothing: the SQLite file appears
// at Open, and a directory that does not exist fails only then.
func TestNewDoesNoIO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "userd.db")
	db, err := New(DriverSQLite, path, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("New created the database file (stat: %v)", err)
	}
	if got := db.Stats(); got.OpenConnections != 0 {
		t.Errorf("Stats before Open = %+v, want zeros", got)
	}
	if err := db.Ping(t.Context()); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Ping before Open = %v, want ErrUnavailable", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close before Open = %v, want nil", err)
	}

	if err := db.Open(t.Context()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Open did not create the database file: %v", err)
	}
	if err := db.Ping(t.Context()); err != nil {
		t.Errorf("Ping after Open = %v", err)
	}
	if err := db.Open(t.Context()); err == nil {
		t.Error("a second Open succeeded, want an error")
	}

	missing, err := New(DriverSQLite, filepath.Join(dir, "no", "such", "dir", "userd.db"), Options{})
	if err != nil {
		t.Fatalf("New with a directory that does not exist: %v, want the error at Open", err)
	}
	if err := missing.Open(t.Context()); err == nil {
		_ = missing.Close()
		t.Fatal("Open in a directory that does not exist succeeded")
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, driver, dsn string }{
		{"unknown_driver", "mysql", "x"},
		{"empty_sqlite_dsn", DriverSQLite, ""},
		{"sqlite_foreign_keys_off", DriverSQLite, "userd.db?_foreign_keys=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if db, err := New(tc.driver, tc.dsn, Options{}); err == nil {
				t.Fatalf("New(%q, %q) = %v, want an error", tc.driver, tc.dsn, db)
			}
		})
	}
}

// Open gives up with its context: an unreachable PostgreSQL does not hold
// a start past its deadline.
func TestOpenHonoursContext(t *testing.T) {
	t.Parallel()
	db, err := New(DriverPostgres, "postgres://userd@127.0.0.1:1/userd?sslmode=disable", Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := db.Open(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Open(cancelled) = %v, want context.Canceled", err)
	}
}
