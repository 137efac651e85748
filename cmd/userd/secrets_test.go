package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/config"
)

// `userd secrets reencrypt` moves every secret to the new first key, after
// which the old key can go; without the key that sealed them, the
// commands refuse to start and say why.
func TestRun_secrets_reencrypt_on_sqlite(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	// The keys, made by a start of the server under the key file it makes.
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": dsn, "USERD_HTTP_ADDR": freeAddr(t)})
	fxtest.New(t, serverOptions(cfg, io.Discard)).RequireStart().RequireStop()
	file, err := secretbox.ReadKeyFile(filepath.Join(dir, keyFileName))
	if err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := secretbox.EncodeKey(file.Keys[0]), secretbox.EncodeKey(secretbox.NewKey())

	t.Setenv("USERD_SECRET_KEY", newKey+","+oldKey)
	code, out, errOut := runCLI(t, "", "secrets", "reencrypt")
	want := "re-encrypted 2 secrets under key " + keyIDOf(t, newKey) + "\n"
	if code != exitOK || out != want {
		t.Fatalf("secrets reencrypt: code %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if code, out, _ = runCLI(t, "", "secrets", "reencrypt"); code != exitOK || !strings.HasPrefix(out, "re-encrypted 0 secrets") {
		t.Errorf("second reencrypt: code %d, %q; want nothing left", code, out)
	}

	t.Setenv("USERD_SECRET_KEY", newKey)
	if code, out, errOut = runCLI(t, "", "keys", "list"); code != exitOK {
		t.Errorf("keys list under the new key alone: code %d: %s%s", code, out, errOut)
	}
	t.Setenv("USERD_SECRET_KEY", oldKey)
	code, _, errOut = runCLI(t, "", "keys", "list")
	if code != exitFailure || !strings.Contains(errOut, "sealed under a secret key that is not configured (key id "+keyIDOf(t, newKey)+")") ||
		!strings.Contains(errOut, "give USERD_SECRET_KEY the key the secrets were sealed with") {
		t.Errorf("keys list under the old key alone: code %d, stderr %q; want the unknown key named", code, errOut)
	}
	if strings.Contains(errOut, oldKey) || strings.Contains(errOut, newKey) {
		t.Errorf("the error shows a key: %s", errOut)
	}

	t.Setenv("USERD_DB_DRIVER", config.DriverMemory)
	t.Setenv("USERD_SECRET_KEY", "")
	if code, _, errOut = runCLI(t, "", "secrets", "reencrypt"); code != exitFailure || !strings.Contains(errOut, "USERD_DB_DRIVER=memory keeps nothing") {
		t.Errorf("secrets reencrypt on memory: code %d, stderr %q", code, errOut)
	}
}

// keyIDOf is the key id of a base64 key.
func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	keys, err := secretbox.ParseKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	return secretbox.KeyID(keys[0])
}
