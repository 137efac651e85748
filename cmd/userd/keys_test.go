package main

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx/fxtest"
)

// With the OpenID provider on (the default), `serve` makes an RS256 key
// beside the access-token key, `keys rotate` adds one of each with one
// activation, and `keys list` shows each key's purpose. With the access
// token key configured, a rotation adds the provider's key alone.
func TestRun_keys_rotate_and_list_the_oidc_provider_keys(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": dsn, "USERD_HTTP_ADDR": freeAddr(t)})
	fxtest.New(t, serverOptions(cfg, io.Discard)).RequireStart().RequireStop()

	purposes := func() map[string][]string {
		t.Helper()
		code, out, errOut := runCLI(t, "", "keys", "list")
		if code != 0 || !strings.Contains(out, "oidc-signing keys (RS256) sign the OpenID provider's") {
			t.Fatalf("keys list: code %d: %s%s", code, out, errOut)
		}
		by := map[string][]string{}
		for kid, row := range keyRows(t, out) {
			by[row[1]+" "+row[2]] = append(by[row[1]+" "+row[2]], kid+" "+row[4])
		}
		return by
	}
	started := purposes()
	if len(started) != 2 || len(started["access-token EdDSA"]) != 1 || len(started["oidc-signing RS256"]) != 1 ||
		!strings.HasSuffix(started["oidc-signing RS256"][0], " active") {
		t.Fatalf("keys after the first start: %v, want an active key of each purpose", started)
	}

	code, out, errOut := runCLI(t, "", "keys", "rotate")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "created EdDSA key") || !strings.HasSuffix(lines[0], "for access tokens") ||
		!strings.HasPrefix(lines[2], "created RS256 key") || !strings.HasSuffix(lines[2], "for the OpenID provider's ID tokens") {
		t.Fatalf("keys rotate: code %d: %s%s", code, out, errOut)
	}
	from := func(line string) string {
		return line[strings.Index(line, "signs with it from "):strings.Index(line, ";")]
	}
	if !strings.Contains(lines[1], "publishes it within 30s") || from(lines[1]) != from(lines[3]) {
		t.Errorf("the two keys are not pending until the same time:\n%s", out)
	}
	rsaKID := strings.Fields(lines[2])[3]
	rotated := purposes()
	if got := rotated["oidc-signing RS256"]; !slices.Contains(got, rsaKID+" pending") || len(got) != 2 || len(rotated["access-token EdDSA"]) != 2 {
		t.Errorf("keys after the rotation: %v, want %s pending beside the first", rotated, rsaKID)
	}

	// The access-token key configured: the provider's key rotates alone.
	t.Setenv("USERD_JWT_ALGORITHM", "HS256")
	t.Setenv("USERD_JWT_HMAC_SECRET", "a-configured-hmac-secret-of-40-bytes-xyz")
	code, out, errOut = runCLI(t, "", "keys", "rotate", "--now")
	if code != 0 || !strings.HasPrefix(out, "created RS256 key") || strings.Count(out, "created") != 1 ||
		!strings.Contains(out, "the access-token key is USERD_JWT_HMAC_SECRET, not stored") {
		t.Fatalf("keys rotate with a configured key: code %d: %s%s", code, out, errOut)
	}

	// The provider off: its keys are listed, ignored.
	t.Setenv("USERD_OIDC_PROVIDER", "false")
	for _, k := range purposes()["oidc-signing RS256"] {
		if !strings.HasSuffix(k, " ignored") {
			t.Errorf("with the provider off, the provider's key %s is not ignored", k)
		}
	}
}
