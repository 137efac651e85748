package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/secretbox"
)

// With SQLite and no key configured, the first start makes userd.key
// beside the database (0600) and logs its path, never its content; later
// starts read it.
func TestSecretKeys_sqlite_makes_a_key_file(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": "file:" + filepath.Join(dir, "userd.db") + "?cache=private"})
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	keys, err := secretKeys(cfg, log)
	if err != nil || len(keys) != 1 {
		t.Fatalf("secretKeys = %d keys, %v", len(keys), err)
	}
	path := filepath.Join(dir, keyFileName)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v; want mode 0600", info, err)
	}
	if !strings.Contains(logs.String(), "path="+path) || strings.Contains(logs.String(), secretbox.EncodeKey(keys[0])) {
		t.Errorf("log = %q, want the key file's path and not the key", logs.String())
	}
	logs.Reset()
	again, err := secretKeys(cfg, log)
	if err != nil || !bytes.Equal(again[0], keys[0]) {
		t.Fatalf("second start: %v; want the key of the file", err)
	}
	if logs.Len() != 0 {
		t.Errorf("second start logged %q, want nothing", logs.String())
	}

	// Made readable by others: a warning, and the key is still used.
	if err := os.Chmod(path, 0o640); err != nil { //nolint:gosec // G302: a file too widely readable is what is tested
		t.Fatal(err)
	}
	if _, err := secretKeys(cfg, log); err != nil || !strings.Contains(logs.String(), "mode=0640") {
		t.Errorf("key file 0640: %v, log %q; want a warning", err, logs.String())
	}
}

// A database in memory gets a random key of its own, and says so.
func TestSecretKeys_in_memory(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, env := range []map[string]string{
		{"USERD_DB_DRIVER": "memory"},
		{"USERD_DB_DSN": ":memory:"},
		{"USERD_DB_DSN": "file:mem?mode=memory&cache=shared"},
	} {
		var logs bytes.Buffer
		a, err := secretKeys(testConfig(t, env), slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || len(a) != 1 {
			t.Fatalf("%v: %d keys, %v", env, len(a), err)
		}
		b, _ := secretKeys(testConfig(t, env), slog.New(slog.DiscardHandler))
		if bytes.Equal(a[0], b[0]) {
			t.Errorf("%v: two starts share a key", env)
		}
		if !strings.Contains(logs.String(), "random key that lasts as long as the process") {
			t.Errorf("%v: log = %q", env, logs.String())
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("files made for an in-memory database: %v", entries)
	}
}

// PostgreSQL without a key refuses to start and says what to set; a key
// configured is used whatever the driver.
func TestSecretKeys_configured_or_refused(t *testing.T) {
	for driver, dsn := range map[string]string{"postgres": "postgres://db/userd", "mysql": "userd@tcp(db:3306)/userd"} {
		_, err := secretKeys(testConfig(t, map[string]string{"USERD_DB_DRIVER": driver, "USERD_DB_DSN": dsn}), slog.New(slog.DiscardHandler))
		for _, want := range []string{"USERD_SECRET_KEY", "USERD_SECRET_KEY_FILE", "openssl rand -base64 32"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s without a key: %v; want it to mention %q", driver, err, want)
			}
		}
	}
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	list := secretbox.EncodeKey(k1) + "," + secretbox.EncodeKey(k2)
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(list+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, env := range []map[string]string{
		{"USERD_DB_DRIVER": "postgres", "USERD_DB_DSN": "postgres://db/userd", "USERD_SECRET_KEY": list},
		{"USERD_DB_DRIVER": "postgres", "USERD_DB_DSN": "postgres://db/userd", "USERD_SECRET_KEY_FILE": file},
		{"USERD_DB_DSN": filepath.Join(t.TempDir(), "userd.db"), "USERD_SECRET_KEY": list},
	} {
		keys, err := secretKeys(testConfig(t, env), slog.New(slog.DiscardHandler))
		if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], k1) || !bytes.Equal(keys[1], k2) {
			t.Errorf("%v: %d keys, %v; want the two configured, in order", env, len(keys), err)
		}
	}
}

// PostgreSQL without a key fails at start, before it touches the database:
// nothing listens at this DSN, and the error is the missing key.
func TestRun_postgres_without_a_key_fails_first(t *testing.T) {
	t.Setenv("USERD_DB_DRIVER", "postgres")
	t.Setenv("USERD_DB_DSN", "postgres://userd@127.0.0.1:1/userd?sslmode=disable&connect_timeout=1")
	for _, args := range [][]string{{"keys", "list"}, {"secrets", "reencrypt"}} {
		code, _, errOut := runCLI(t, "", args...)
		if code != exitFailure || !strings.Contains(errOut, "no secret key: with USERD_DB_DRIVER=postgres or mysql, set USERD_SECRET_KEY") ||
			strings.Contains(errOut, "open postgres database") {
			t.Errorf("%v: code %d, stderr %q; want the missing key, before the database", args, code, errOut)
		}
	}
}
