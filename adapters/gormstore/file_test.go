package gormstore

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A new SQLite database is created 0600, and SQLite gives its -wal and
// -shm files the same mode, whatever the umask allows.
func TestSQLiteNewFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022) // the usual umask, under which SQLite would make 0644
	defer syscall.Umask(old)
	for _, dsn := range []func(dir string) string{
		func(dir string) string { return filepath.Join(dir, "userd.db") },
		func(dir string) string { return "file:" + filepath.Join(dir, "userd.db") + "?cache=private" },
		func(dir string) string { return "file://" + filepath.Join(dir, "userd.db") },
	} {
		dir := t.TempDir()
		db := openSQLiteDSN(t, dsn(dir))
		if err := NewKeyStore(db, newTestBox(t)).AddKey(t.Context(), newTestKey("k-1")); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"userd.db", "userd.db-wal", "userd.db-shm"} {
			info, err := os.Stat(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%s: %v", dsn(dir), err)
			}
			if mode := info.Mode().Perm(); mode != 0o600 {
				t.Errorf("%s: %s has mode %#o, want 0600", dsn(dir), name, mode)
			}
		}
		mustClose(t, db)
	}
}

// An existing database readable by others is left as it is, with a
// warning that names it and its mode.
func TestSQLiteWideFileWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "userd.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { //nolint:gosec // G302: a file too widely readable is what is tested
		t.Fatal(err)
	}
	var logs bytes.Buffer
	db, err := Open(DriverSQLite, path, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "path="+path) ||
		!strings.Contains(logs.String(), "mode=0644") {
		t.Errorf("log = %q, want a warning naming the path and mode 0644", logs.String())
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("the file's mode was changed: %v, %v", info.Mode().Perm(), err)
	}

	// A private file: no warning.
	logs.Reset()
	private := filepath.Join(t.TempDir(), "private.db")
	db2, err := Open(DriverSQLite, private, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db2)
	if logs.Len() != 0 {
		t.Errorf("log of a private file = %q, want nothing", logs.String())
	}
}

func TestSQLiteFile(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"userd.db":                             "userd.db",
		"/var/lib/userd/userd.db":              "/var/lib/userd/userd.db",
		"userd.db?_busy_timeout=50":            "userd.db",
		"file:userd.db":                        "userd.db",
		"file:/var/lib/userd/userd.db?mode=rw": "/var/lib/userd/userd.db",
		"file:///var/lib/userd/userd.db":       "/var/lib/userd/userd.db",
		"file://localhost/var/lib/u%20d.db":    "/var/lib/u d.db",
		"file:my%20data.db":                    "my data.db",
		":memory:":                             "",
		"file::memory:?cache=shared":           "",
		"file:mem?mode=memory&cache=shared":    "",
		"file://otherhost/userd.db":            "",
		"":                                     "",
	} {
		got, ok := SQLiteFile(dsn)
		if got != want || ok != (want != "") {
			t.Errorf("SQLiteFile(%q) = %q, %v; want %q", dsn, got, ok, want)
		}
	}
}
