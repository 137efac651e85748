// Package totpgen is the tests' own TOTP generator (RFC 6238 over RFC
// 4226: HMAC-SHA-1, 6 digits, 30-second steps), what an authenticator app
// shows. It shares nothing with userd's adapters/totp, so that a test
// that signs in with its codes checks userd against an independent
// implementation of the other side.
package totpgen

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // G505: RFC 6238's TOTP is HMAC-SHA-1, as authenticator apps compute it
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Code returns the code of the base32 secret (any case, padded or not,
// spaces ignored) at the time at, or an error for a secret that is not
// base32.
func Code(secret string, at time.Time) (string, error) {
	clean := strings.ToUpper(strings.TrimRight(strings.ReplaceAll(secret, " ", ""), "="))
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(clean)
	if err != nil {
		return "", fmt.Errorf("TOTP secret: %w", err)
	}
	var counter [8]byte
	binary.BigEndian.PutUint64(counter[:], uint64(at.Unix()/30)) //nolint:gosec // G115: times after 1970
	mac := hmac.New(sha1.New, key)
	mac.Write(counter[:])
	sum := mac.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%06d", v%1_000_000), nil
}

// MustCode is Code for a test: the code of the base32 secret at the time
// at, failing t when the secret is not base32.
func MustCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	code, err := Code(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return code
}
