package attack

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/softauthn"
	"github.com/userd/userd/test/totpgen"
	"github.com/userd/userd/test/userdproc"
)

// The findings of issue 24 about second factors, each tried on the
// running binary as an attacker who stole a victim's access token (from a
// browser's storage, or a computer left signed in) would. Run with
// USERD_ATTACK_BINARY set to a build from before the fixes, each fails.

// passkeyOrigin is the origin userd accepts passkeys from by default (the
// origin of USERD_PUBLIC_URL), which the software authenticator writes
// into its client data.
const passkeyOrigin = "http://localhost:8080"

// High finding 1: the token alone began a passkey registration, even with
// USERD_REQUIRE_CURRENT_PASSWORD=true, and the attacker kept a lasting
// passwordless sign-in. Now the registration asks for the password, and
// guesses at it lock the email out.
func TestAttack_stolen_token_cannot_add_a_passkey(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_REQUIRE_CURRENT_PASSWORD"] = "true"
	n := userdproc.New(t, binary, env)
	n.Start()
	stolen := signUp(t, n.Base, "victim@example.com", nil) // what the thief holds
	begin := n.Base + "/api/users/me/passkeys/registration"

	if r := kit.Send(t, http.MethodPost, begin, map[string]string{}, stolen.AccessToken); r.Status != http.StatusBadRequest ||
		r.Code() != "validation_failed" {
		t.Fatalf("registration with the token alone: %d %s, want 400 validation_failed", r.Status, r.Body)
	}
	for i := range 5 {
		r := kit.Send(t, http.MethodPost, begin, map[string]string{"currentPassword": "a guess"}, stolen.AccessToken)
		if r.Status != http.StatusUnauthorized || r.Code() != "invalid_credentials" {
			t.Fatalf("guess %d: %d %s, want 401 invalid_credentials", i+1, r.Status, r.Body)
		}
	}
	// Five guesses lock the email: the right password is refused unchecked.
	if r := kit.Send(t, http.MethodPost, begin, map[string]string{"currentPassword": userPassword}, stolen.AccessToken); r.Status != http.StatusTooManyRequests ||
		r.Code() != "too_many_attempts" {
		t.Fatalf("after five guesses: %d %s, want 429 too_many_attempts", r.Status, r.Body)
	}
	// Nothing was added.
	var p []json.RawMessage
	r := kit.Send(t, http.MethodGet, n.Base+"/api/users/me/passkeys", nil, stolen.AccessToken)
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &p) != nil || len(p) != 0 {
		t.Errorf("the victim's passkeys: %d %s, want none", r.Status, r.Body)
	}
}

// enrolTOTP turns TOTP on for the holder of tok with its password, and
// returns the secret.
func enrolTOTP(t *testing.T, base, tok string) string {
	t.Helper()
	r := kit.Send(t, http.MethodPost, base+"/api/users/me/mfa/totp", map[string]string{"currentPassword": userPassword}, tok)
	var e struct {
		Secret string `json:"secret"`
	}
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &e) != nil {
		t.Fatalf("begin TOTP: %d %s", r.Status, r.Body)
	}
	code, err := totpgen.Code(e.Secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r := kit.Send(t, http.MethodPost, base+"/api/users/me/mfa/totp/confirm", map[string]string{"code": code}, tok); r.Status != http.StatusOK {
		t.Fatalf("confirm TOTP: %d %s", r.Status, r.Body)
	}
	return e.Secret
}

// Medium finding 2: TOTP codes could be guessed without limit through
// the routes that turn TOTP off and renew recovery codes (973 a second,
// no 429). Now wrong codes lock the email out, as in a login's second
// step, and the routes spend the client's /auth allowance.
func TestAttack_totp_codes_cannot_be_guessed_through_the_account_routes(t *testing.T) {
	t.Parallel()
	for name, route := range map[string]struct{ method, path string }{
		"disable": {http.MethodDelete, "/api/users/me/mfa/totp"},
		"renew":   {http.MethodPost, "/api/users/me/mfa/recovery-codes"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := userdproc.New(t, binary, baseEnv(t.TempDir()))
			n.Start()
			stolen := signUp(t, n.Base, "victim@example.com", nil) // what the thief holds
			enrolTOTP(t, n.Base, stolen.AccessToken)
			var got []int
			for range 8 {
				r := kit.Send(t, route.method, n.Base+route.path, map[string]string{"code": "000000"}, stolen.AccessToken)
				got = append(got, r.Status)
			}
			if got[4] != http.StatusBadRequest || got[5] != http.StatusTooManyRequests || got[7] != http.StatusTooManyRequests {
				t.Errorf("eight wrong codes answered %v, want five 400 then 429", got)
			}
			r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": userPassword}, "")
			if r.Status != http.StatusTooManyRequests || r.Code() != "too_many_attempts" {
				t.Errorf("the owner's login after the guesses: %d %s, want 429 too_many_attempts", r.Status, r.Body)
			}
		})
	}
	t.Run("per_ip_allowance", func(t *testing.T) {
		t.Parallel()
		env := baseEnv(t.TempDir())
		env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
		env["USERD_AUTH_IP_LIMIT"] = "4"
		n := userdproc.New(t, binary, env)
		n.Start()
		stolen := signUp(t, n.Base, "victim@example.com", from("203.0.113.10"))
		thief := from("198.51.100.7")
		var got []int
		for range 5 {
			r := kit.Send(t, http.MethodDelete, n.Base+"/api/users/me/mfa/totp", map[string]string{"code": "000000"}, stolen.AccessToken, thief...)
			got = append(got, r.Status)
		}
		if got[4] != http.StatusTooManyRequests {
			t.Errorf("five guesses from one address with an allowance of 4: %v, want the fifth 429 rate_limited", got)
		}
	})
}

// Medium finding 3: removing the last passkey turned two-step
// verification off with the token alone. Now it takes the password (or a
// session that signed in with a second factor).
func TestAttack_stolen_token_cannot_remove_the_last_passkey(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	stolen := signUp(t, n.Base, "victim@example.com", nil) // what the thief holds
	// The owner adds a passkey (from the same session, moments after
	// signing in; a build from before the fix takes no password, and
	// refuses the field).
	begin := n.Base + "/api/users/me/passkeys/registration"
	r := kit.Send(t, http.MethodPost, begin, map[string]string{"currentPassword": userPassword}, stolen.AccessToken)
	if r.Status == http.StatusBadRequest && r.Code() == "unknown_field" {
		r = kit.Send(t, http.MethodPost, begin, nil, stolen.AccessToken)
	}
	var c struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &c) != nil {
		t.Fatalf("begin registration: %d %s", r.Status, r.Body)
	}
	cred, err := softauthn.New(passkeyOrigin).Create(c.PublicKey, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	r = kit.Send(t, http.MethodPost, begin+"/finish", map[string]any{"ceremonyId": c.CeremonyID, "credential": cred}, stolen.AccessToken)
	var pk struct {
		ID string `json:"id"`
	}
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &pk) != nil {
		t.Fatalf("finish registration: %d %s", r.Status, r.Body)
	}

	// The thief, with the same access token, tries to take it away.
	for _, body := range []any{nil, map[string]string{}} {
		r := kit.Send(t, http.MethodDelete, n.Base+"/api/users/me/passkeys/"+pk.ID, body, stolen.AccessToken)
		if r.Status != http.StatusBadRequest || r.Code() != "validation_failed" {
			t.Errorf("removal with the token alone (%v): %d %s, want 400 validation_failed", body, r.Status, r.Body)
		}
	}
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": userPassword}, ""); r.Status != http.StatusUnauthorized ||
		r.Code() != "mfa_required" {
		t.Errorf("the password alone after the attempts: %d %s, want 401 mfa_required (the passkey still guards it)", r.Status, r.Body)
	}
}
