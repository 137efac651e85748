package config

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/secretbox"
)

func TestSecretKey(t *testing.T) {
	t.Parallel()
	a, b := secretbox.EncodeKey(secretbox.NewKey()), secretbox.EncodeKey(secretbox.NewKey())
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := file("good.key", a+","+b+"\n")
	for _, e := range []map[string]string{
		{"USERD_SECRET_KEY": a},
		{"USERD_SECRET_KEY": a + "," + b},
		{"USERD_SECRET_KEY_FILE": good},
		{"USERD_SECRET_KEY_FILE": file("crlf.key", a+"\r\n")},
	} {
		c, err := LoadFrom(env(e))
		if err != nil {
			t.Errorf("LoadFrom(%v): %v", e, err)
			continue
		}
		if c.SecretKey != e["USERD_SECRET_KEY"] || c.SecretKeyFile != e["USERD_SECRET_KEY_FILE"] {
			t.Errorf("LoadFrom(%v) = %q, %q", e, c.SecretKey, c.SecretKeyFile)
		}
	}

	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 31))
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 33))
	secretPath := filepath.Join(dir, "secret-path-do-not-print")
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"both", map[string]string{"USERD_SECRET_KEY": a, "USERD_SECRET_KEY_FILE": good}, "USERD_SECRET_KEY and USERD_SECRET_KEY_FILE: set one, not both"},
		{"short", map[string]string{"USERD_SECRET_KEY": short}, "USERD_SECRET_KEY: the key is 31 bytes, want 32"},
		{"long_second", map[string]string{"USERD_SECRET_KEY": a + "," + long}, "USERD_SECRET_KEY: key 2 of 2 is 33 bytes, want 32"},
		{"not_base64", map[string]string{"USERD_SECRET_KEY": "not a key!" + a}, "USERD_SECRET_KEY: the key is not base64"},
		{"empty_item", map[string]string{"USERD_SECRET_KEY": a + ",," + b}, "USERD_SECRET_KEY: key 2 of 3 is empty"},
		{"repeated", map[string]string{"USERD_SECRET_KEY": a + "," + a}, "USERD_SECRET_KEY: key 2 of 2 repeats key 1"},
		{"file_missing", map[string]string{"USERD_SECRET_KEY_FILE": secretPath}, "USERD_SECRET_KEY_FILE: read: no such file or directory"},
		{"file_empty", map[string]string{"USERD_SECRET_KEY_FILE": file("empty.key", "\n")}, "USERD_SECRET_KEY_FILE: holds no key"},
		{"file_short", map[string]string{"USERD_SECRET_KEY_FILE": file("short.key", short+"\n")}, "USERD_SECRET_KEY_FILE: the key is 31 bytes, want 32"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadFrom(env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoadFrom = %v, want %q", err, tt.want)
			}
			for _, secret := range []string{a, b, short, long, "secret-path-do-not-print"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a secret: %v", err)
				}
			}
		})
	}
}

// Both settings are masked wherever the configuration is shown.
func TestSecretKeyNeverShown(t *testing.T) {
	t.Parallel()
	key := secretbox.EncodeKey(secretbox.NewKey())
	path := filepath.Join(t.TempDir(), "secret-path-do-not-print.key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range []map[string]string{{"USERD_SECRET_KEY": key}, {"USERD_SECRET_KEY_FILE": path}} {
		c, err := LoadFrom(env(e))
		if err != nil {
			t.Fatal(err)
		}
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c)
		for how, out := range map[string]string{
			"String": c.String(), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
			"slog": logged.String(), "Redacted": fmt.Sprint(c.Redacted()),
		} {
			if strings.Contains(out, key) || strings.Contains(out, "secret-path-do-not-print") {
				t.Errorf("%s shows the secret: %s", how, out)
			}
		}
		for name := range e {
			if got := c.Redacted()[name]; got != mask {
				t.Errorf("%s shown as %q, want %q", name, got, mask)
			}
		}
	}
}
