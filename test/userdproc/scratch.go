package userdproc

import (
	"maps"
	"net"
	"testing"
)

// StartScratch starts a node of the binary bin that the browser suites
// (test/oidcflow, test/pagesflow, test/idpflow) reach at
// http://host:<a free port>, its USERD_PUBLIC_URL, over a scratch SQLite
// database, with cheap password hashing, warn-level logs, the bootstrap
// admin adminEmail, and passkeys on the relying party localhost (a
// domain name, whatever host is); extra settings go over these. It
// returns the node and its public URL as the settings end up (an extra
// USERD_PUBLIC_URL wins), and shows the node's log when the test fails.
func StartScratch(t testing.TB, bin, host, adminEmail, adminPassword string, extra ...map[string]string) (*Node, string) {
	t.Helper()
	addr := FreeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"USERD_HTTP_ADDR":                addr,
		"USERD_PUBLIC_URL":               "http://" + host + ":" + port,
		"USERD_WEBAUTHN_RP_ID":           "localhost",
		"USERD_WEBAUTHN_ORIGINS":         "http://localhost:" + port,
		"USERD_DB_DRIVER":                "sqlite",
		"USERD_DB_DSN":                   t.TempDir() + "/userd.db",
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
		"USERD_LOG_LEVEL":                "warn",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
	}
	for _, e := range extra {
		maps.Copy(env, e)
	}
	n := New(t, bin, env)
	n.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("userd's log (%s):\n%s", n.Base, n.Log.String())
		}
	})
	return n, env["USERD_PUBLIC_URL"]
}
