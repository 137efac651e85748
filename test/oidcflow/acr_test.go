package oidcflow

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/totpgen"
)

// TestAuthorize_acr_aal2: acr_values=aal2 (contract-identity.md). A user
// whose browser signed in with a password alone, and who has a second
// factor since, must sign in again with it: the ID token then says acr
// aal2 and the amr of a password and a one-time code. A user without a
// second factor goes on at aal1, and the ID token says so.
func TestAuthorize_acr_aal2(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	app := p.newClient(t, "Launch control", map[string]any{"firstParty": true})
	const redirect = "http://127.0.0.1:9/cb"
	aal2 := map[string]string{"acr_values": "aal2"}

	t.Run("without_second_factor", func(t *testing.T) {
		p.register(t, "Without", "without@example.com")
		a := p.signIn(t, "without@example.com")
		c := claimsOf(t, p.signedInTokens(t, a, app, redirect, aal2).IDToken)
		if c["acr"] != "aal1" || a.signIns != 0 {
			t.Errorf("acr_values=aal2 for a user without a second factor: acr %v after %d sign-ins, want aal1 at once", c["acr"], a.signIns)
		}
	})

	t.Run("with_second_factor", func(t *testing.T) {
		const email = "with@example.com"
		p.register(t, "With", email)
		a := p.signIn(t, email) // a password alone: aal1
		secret, confirmedAt := enrolTOTP(t, p, email)
		a.code2 = func() string { return totpgen.MustCode(t, secret, confirmedAt.Add(30*time.Second)) }
		c := claimsOf(t, p.signedInTokens(t, a, app, redirect, aal2).IDToken)
		amr, _ := c["amr"].([]any)
		if c["acr"] != "aal2" || !slices.Contains(amr, any("otp")) || !slices.Contains(amr, any("pwd")) || a.signIns != 1 {
			t.Errorf("acr_values=aal2 for a user with TOTP: acr %v amr %v after %d sign-ins, want aal2, pwd and otp after one", c["acr"], amr, a.signIns)
		}
	})
}

// enrolTOTP gives the account a TOTP factor through the API, and returns
// its secret and when the confirming code was made.
func enrolTOTP(t *testing.T, p provider, email string) (string, time.Time) {
	t.Helper()
	tok := kit.Login(t, p.node.Base, email, userPassword)
	var enrol struct {
		Secret string `json:"secret"`
	}
	kit.Want(t, "begin TOTP", p.api(t, http.MethodPost, "/api/users/me/mfa/totp",
		map[string]string{"currentPassword": userPassword}, tok.AccessToken), http.StatusCreated, &enrol)
	now := time.Now()
	kit.Want(t, "confirm TOTP", p.api(t, http.MethodPost, "/api/users/me/mfa/totp/confirm",
		map[string]string{"code": totpgen.MustCode(t, enrol.Secret, now)}, tok.AccessToken), http.StatusOK, nil)
	return enrol.Secret, now
}
