package attack

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// Names that hide what they say: a right-to-left override makes a name
// read backwards in a console or an email, zero-width characters make
// "admin\u200b" look like "admin". They are refused like control
// characters.
func TestAttack_invisible_formatting_characters_in_names(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	for i, name := range []string{"Ada \u202eecalevoL", "admin\u200b", "\ufeffRoot", "Ada\u2066King\u2069"} {
		r := kit.Send(t, http.MethodPost, n.Base+"/api/users", map[string]any{
			"name": name, "email": "user" + string(rune('a'+i)) + "@example.com", "password": userPassword,
		}, "")
		if r.Status != http.StatusBadRequest || r.Code() != "validation_failed" || !strings.Contains(string(r.Body), `"field":"name"`) {
			t.Errorf("name %q: %d %s, want 400 validation_failed on name", name, r.Status, r.Body)
		}
	}
}

// Whoever registers the bootstrap admin's address before the operator's
// first start must not leave the deployment without the admin the
// operator believes it has: the start fails and says why.
func TestAttack_bootstrap_admin_email_taken_by_a_customer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := baseEnv(dir)
	delete(env, "USERD_BOOTSTRAP_ADMIN_EMAIL")
	delete(env, "USERD_BOOTSTRAP_ADMIN_PASSWORD")
	open := userdproc.New(t, binary, env)
	open.Start()
	const boss = "boss@example.com"
	if r := kit.Send(t, http.MethodPost, open.Base+"/api/users", map[string]any{
		"name": "Squatter", "email": boss, "password": userPassword}, ""); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	open.Stop()

	env = baseEnv(dir)
	env["USERD_BOOTSTRAP_ADMIN_EMAIL"] = "Boss@Example.com"
	n := userdproc.New(t, binary, env)
	err := n.StartErr()
	if err == nil {
		t.Fatal("userd started although its bootstrap admin's email belongs to a customer")
	}
	if !strings.Contains(err.Error(), "does not hold ROLE_ADMIN") || !strings.Contains(err.Error(), boss) {
		t.Fatalf("the failed start does not say why:\n%v", err)
	}
}

// With USERD_REQUIRE_CURRENT_PASSWORD=true a stolen admin token cannot
// change the admin's own password or email without the current password.
func TestAttack_admin_token_changes_its_own_password(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_REQUIRE_CURRENT_PASSWORD"] = "true"
	n := userdproc.New(t, binary, env)
	n.Start()
	admin := kit.Login(t, n.Base, adminEmail, adminPassword)
	url := n.Base + "/api/users/" + admin.User.ID
	for _, body := range []map[string]any{
		{"password": "stolen-Token-Passphrase-1"},
		{"email": "attacker@example.com"},
	} {
		r := kit.Send(t, http.MethodPut, url, body, admin.AccessToken)
		var p struct {
			Errors []struct{ Field string } `json:"errors"`
		}
		_ = json.Unmarshal(r.Body, &p) // checked below
		if r.Status != http.StatusBadRequest || len(p.Errors) == 0 || p.Errors[0].Field != "currentPassword" {
			t.Errorf("PUT %v without currentPassword: %d %s, want 400 on currentPassword", body, r.Status, r.Body)
		}
	}
	r := kit.Send(t, http.MethodPut, url, map[string]any{"password": "new-Admin-Passphrase-2", "currentPassword": adminPassword}, admin.AccessToken)
	if r.Status != http.StatusOK {
		t.Fatalf("PUT with the current password: %d %s", r.Status, r.Body)
	}
}
