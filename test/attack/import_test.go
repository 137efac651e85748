package attack

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// Medium finding 4 of issue 24: `userd users import` took bcrypt up to
// cost 16 and argon2id up to 1 GiB and 20 passes, so that one anonymous
// wrong guess at such an account held a hashing slot for seconds, left the
// process at 1.1 GB, and answered slower than an unknown email (telling
// who was imported). Now a hash costlier than the configured argon2id is
// refused as a bad line, naming it, and nothing is imported.
func TestAttack_import_refuses_hashes_costlier_than_the_configured_one(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	// The defaults' cost: bcrypt up to 8 passes the ceiling, 12 does not.
	env["USERD_ARGON2_MEMORY_KIB"] = "19456"
	env["USERD_ARGON2_ITERATIONS"] = "2"
	n := userdproc.New(t, binary, env)
	costly, err := bcrypt.GenerateFromPassword([]byte(userPassword), 12)
	if err != nil {
		t.Fatal(err)
	}
	cheap, err := bcrypt.GenerateFromPassword([]byte(userPassword), 8)
	if err != nil {
		t.Fatal(err)
	}
	salt := base64.RawStdEncoding.EncodeToString([]byte("saltsaltsaltsalt"))
	sum := base64.RawStdEncoding.EncodeToString(make([]byte, 32))
	gib := fmt.Sprintf("$argon2id$v=19$m=1048576,t=20,p=1$%s$%s", salt, sum)
	line := func(email, hash string) string {
		return fmt.Sprintf(`{"name":"Imported","email":%q,"passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`, email, hash)
	}
	file := strings.Join([]string{
		line("cheap@example.com", string(cheap)),
		line("costly@example.com", string(costly)),
		line("gib@example.com", gib),
	}, "\n") + "\n"
	code, out, errOut := n.Run(file, "users", "import", "--format", "jsonl", "-")
	if code == 0 {
		t.Fatalf("the import succeeded:\n%s%s", out, errOut)
	}
	for _, want := range []string{"line 2: passwordHash", "line 3: passwordHash", "costlier"} {
		if !strings.Contains(errOut, want) && !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s%s", want, out, errOut)
		}
	}
	if strings.Contains(errOut+out, "line 1:") {
		t.Errorf("the bcrypt cost-8 line was refused:\n%s%s", out, errOut)
	}
	// Nothing of a refused file is imported.
	n.Start()
	if r := kit.Send(t, "POST", n.Base+"/auth/login", map[string]string{"email": "cheap@example.com", "password": userPassword}, ""); r.Status != 401 {
		t.Errorf("a line of the refused file signs in: %d %s", r.Status, r.Body)
	}
}
