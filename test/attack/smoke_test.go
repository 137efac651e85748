package attack

import (
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// The harness itself: a node starts, its bootstrap admin signs in, and its
// commands run with its configuration.
func TestHarness_node_starts_and_runs_commands(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	kit.Login(t, n.Base, adminEmail, adminPassword)
	if r := kit.Send(t, "POST", n.Base+"/auth/login", map[string]string{"email": adminEmail, "password": "wrong-Passphrase-1"}, ""); r.Code() != "invalid_credentials" {
		t.Fatalf("wrong password: %d %s", r.Status, r.Body)
	}
	if code, out, errOut := n.Run("", "keys", "list"); code != 0 || out == "" {
		t.Fatalf("keys list: %d %q %q", code, out, errOut)
	}
}
