package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/secretbox"
)

func TestParseKeys(t *testing.T) {
	t.Parallel()
	a, b := secretbox.NewKey(), secretbox.NewKey()
	ea, eb := secretbox.EncodeKey(a), secretbox.EncodeKey(b)
	for _, text := range []string{ea + "," + eb, " " + ea + " , " + eb + "\n", ea + ",\n" + eb + "\r\n"} {
		keys, err := secretbox.ParseKeys(text)
		if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], a) || !bytes.Equal(keys[1], b) {
			t.Errorf("ParseKeys(%q) = %d keys, %v; want a then b", text, len(keys), err)
		}
	}
	for text, want := range map[string]string{
		"":          "holds no key",
		"  \n":      "holds no key",
		ea + ",":    "key 2 of 2 is empty",
		"!!!":       "the key is not base64",
		ea + ",%%%": "key 2 of 2 is not base64",
		base64.StdEncoding.EncodeToString(a[:16]):                                       "the key is 16 bytes, want 32",
		base64.RawStdEncoding.EncodeToString(a):                                         "the key is not base64",
		base64.URLEncoding.EncodeToString(append(bytes.Repeat([]byte{0xfb}, 31), 0xff)): "the key is not base64",
		ea + "," + eb + "," + ea:                                                        "key 3 of 3 repeats key 1",
	} {
		_, err := secretbox.ParseKeys(text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%q) = %v, want %q", text, err, want)
			continue
		}
		if strings.Contains(err.Error(), ea) || strings.Contains(err.Error(), eb) {
			t.Errorf("ParseKeys error shows a key: %v", err)
		}
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "userd.key")
	made, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil || !made.Created || len(made.Keys) != 1 || made.Mode != 0o600 {
		t.Fatalf("first call = %+v, %v; want a new key, mode 0600", made, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, %v; want 0600", info.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != secretbox.EncodeKey(made.Keys[0])+"\n" {
		t.Errorf("file holds %q, want the key in base64 and a line break", data)
	}
	again, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil || again.Created || len(again.Keys) != 1 || !bytes.Equal(again.Keys[0], made.Keys[0]) {
		t.Fatalf("second call = %+v, %v; want the same key, read", again, err)
	}
	read, err := secretbox.ReadKeyFile(path)
	if err != nil || !bytes.Equal(read.Keys[0], made.Keys[0]) {
		t.Fatalf("ReadKeyFile = %+v, %v", read, err)
	}
}

// Processes starting together on a new database agree on one key.
func TestLoadOrCreateKeyFile_race(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "userd.key")
	const n = 8
	got := make([]secretbox.KeyFile, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = secretbox.LoadOrCreateKeyFile(path) })
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if got[i].Created {
			created++
		}
		if !bytes.Equal(got[i].Keys[0], got[0].Keys[0]) {
			t.Fatalf("call %d read another key", i)
		}
	}
	if created != 1 {
		t.Errorf("%d calls created the file, want 1", created)
	}
}

func TestReadKeyFile_errors_name_no_path(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "secret-name-missing.key")
	if _, err := secretbox.ReadKeyFile(missing); err == nil || strings.Contains(err.Error(), "secret-name") {
		t.Errorf("missing file: %v; want an error without the path", err)
	}
	wide := filepath.Join(dir, "wide.key")
	if err := os.WriteFile(wide, []byte(secretbox.EncodeKey(secretbox.NewKey())), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(wide, 0o644); err != nil { //nolint:gosec // G302: a file too widely readable is what is tested
		t.Fatal(err)
	}
	if kf, err := secretbox.ReadKeyFile(wide); err != nil || kf.Mode != 0o644 {
		t.Errorf("ReadKeyFile(0644 file) = %+v, %v; want its mode reported", kf, err)
	}
}
