package secretbox

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// ParseKeys reads a comma-separated list of base64 keys (standard
// alphabet, padded, as `openssl rand -base64 32` prints them), each
// KeyLen bytes once decoded; spaces and line breaks around the keys are
// ignored. The first is the current key. Errors say which key is wrong and
// why, never what it is.
func ParseKeys(text string) ([][]byte, error) {
	items := strings.Split(strings.TrimSpace(text), ",")
	if len(items) == 1 && items[0] == "" {
		return nil, errNoKeys
	}
	keys := make([][]byte, 0, len(items))
	seen := map[string]int{}
	for i, item := range items {
		where := fmt.Sprintf("key %d of %d", i+1, len(items))
		if len(items) == 1 {
			where = "the key"
		}
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("%s is empty", where)
		}
		k, err := base64.StdEncoding.Strict().DecodeString(item)
		if err != nil {
			// The decoder's error quotes a position, not the input; still,
			// nothing of it is needed.
			return nil, fmt.Errorf("%s is not base64", where)
		}
		if len(k) != KeyLen {
			return nil, fmt.Errorf("%s is %d bytes, want %d (base64 of %d random bytes: openssl rand -base64 %d)", where, len(k), KeyLen, KeyLen, KeyLen)
		}
		if j, dup := seen[string(k)]; dup {
			return nil, fmt.Errorf("%s repeats key %d", where, j+1)
		}
		seen[string(k)] = i
		keys = append(keys, k)
	}
	return keys, nil
}

// EncodeKey is the text of a key as ParseKeys reads it.
func EncodeKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }

// KeyFile is a key file read or made by ReadKeyFile or LoadOrCreateKeyFile.
type KeyFile struct {
	// Keys are the keys it holds, the current one first.
	Keys [][]byte
	// Created is true when LoadOrCreateKeyFile has just made the file.
	Created bool
	// Mode is the file's permission bits; anything beyond 0600 lets other
	// users read the key.
	Mode fs.FileMode
}

// ReadKeyFile reads a file holding what ParseKeys reads (a trailing line
// break is fine). Its errors do not name the file; the caller says which
// it is.
func ReadKeyFile(path string) (KeyFile, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the operator's own key file, named by the configuration
	if err != nil {
		return KeyFile{}, fmt.Errorf("read: %w", bareError(err))
	}
	keys, err := ParseKeys(string(data))
	if err != nil {
		return KeyFile{}, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return KeyFile{}, fmt.Errorf("stat: %w", bareError(err))
	}
	return KeyFile{Keys: keys, Mode: info.Mode().Perm()}, nil
}

// keyFileWait is how long LoadOrCreateKeyFile waits for the key of a file
// that another process has just created and not written yet.
const keyFileWait = 2 * time.Second

// LoadOrCreateKeyFile reads the key file at path, or makes it when there
// is none: one new random key in base64 and a line break, mode 0600,
// created with O_EXCL so that two processes starting together on a new
// database never make two keys (the loser reads the winner's, waiting a
// moment if it is not written yet). The directory must exist.
func LoadOrCreateKeyFile(path string) (KeyFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: the path is the database's directory and a fixed name
	if err == nil {
		key := NewKey()
		_, werr := f.WriteString(EncodeKey(key) + "\n")
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			// A file without its key would stop every later start.
			_ = os.Remove(path)
			return KeyFile{}, fmt.Errorf("write: %w", bareError(werr))
		}
		return KeyFile{Keys: [][]byte{key}, Created: true, Mode: 0o600}, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return KeyFile{}, fmt.Errorf("create: %w", bareError(err))
	}
	deadline := time.Now().Add(keyFileWait)
	for {
		kf, err := ReadKeyFile(path)
		if !errors.Is(err, errNoKeys) || time.Now().After(deadline) {
			return kf, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bareError drops the path from a file-system error: the caller names the
// file its own way.
func bareError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
