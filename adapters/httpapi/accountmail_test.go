package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// withRequireEmailVerification refuses logins of unverified accounts.
func withRequireEmailVerification() serverOption {
	return func(c *serverConfig) { c.app.RequireEmailVerification = true }
}

// deliver runs the sender until the outbox has nothing due: what waits
// goes to the test's mailer (a request for a link takes two rounds: the
// request, then the message it queues).
func (s *testServer) deliver() {
	s.t.Helper()
	for range 10 {
		n, err := s.delivery.RunOnce(context.Background())
		if err != nil {
			s.t.Fatalf("delivery: %v", err)
		}
		if n == 0 {
			return
		}
	}
	s.t.Fatal("the outbox does not drain")
}

// mailsTo returns the messages of template sent to email so far.
func (s *testServer) mailsTo(email string, template domain.MailTemplate) []domain.Mail {
	var out []domain.Mail
	for _, m := range s.mailer.Sent() {
		if string(m.To) == email && m.Template == template {
			out = append(out, m)
		}
	}
	return out
}

// linkToken delivers what waits and returns the token of the last link of
// template sent to email.
func (s *testServer) linkToken(email string, template domain.MailTemplate) string {
	s.t.Helper()
	s.deliver()
	mails := s.mailsTo(email, template)
	if len(mails) == 0 {
		s.t.Fatalf("no %s message to %s", template, email)
	}
	link, err := url.Parse(mails[len(mails)-1].Data["link"])
	if err != nil {
		s.t.Fatal(err)
	}
	return link.Query().Get("token")
}

func TestEmailVerification(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	u := s.register("Ada", "ada@example.com")
	if u.EmailVerified || u.Disabled || u.MFAEnabled {
		t.Fatalf("a new account is %+v, want unverified, enabled, no MFA", u)
	}
	token := s.linkToken("ada@example.com", domain.MailVerifyEmail)

	// A request for a verification link is 202 for an unknown email too,
	// and sends nothing to it.
	for _, email := range []string{"ada@example.com", "nobody@example.com"} {
		res := s.do("POST", "/auth/email-verification", map[string]string{"email": email})
		if res.Status != http.StatusAccepted || len(res.Body) != 0 {
			t.Errorf("request for %s: %d %q, want 202 and no body", email, res.Status, res.Body)
		}
	}
	s.deliver()
	if n := len(s.mailsTo("nobody@example.com", domain.MailVerifyEmail)); n != 0 {
		t.Errorf("%d messages to an email no account has", n)
	}
	if n := len(s.mailsTo("ada@example.com", domain.MailVerifyEmail)); n != 2 {
		t.Errorf("%d verification messages to ada, want 2 (registration, request)", n)
	}

	var verified userBody
	wantJSON(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": token}), http.StatusOK, &verified)
	if !verified.EmailVerified || verified.ID != u.ID {
		t.Errorf("confirmed: %+v, want ada verified", verified)
	}
	// Used once: the same token again is the one invalid_token answer.
	wantProblem(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": token}), http.StatusBadRequest, "invalid_token")

	// A verified account is sent nothing more on request.
	s.do("POST", "/auth/email-verification", map[string]string{"email": "ada@example.com"})
	s.deliver()
	if n := len(s.mailsTo("ada@example.com", domain.MailVerifyEmail)); n != 2 {
		t.Errorf("%d verification messages after verifying, want still 2", n)
	}
}

func TestLinkRoutes_bad_requests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	resetToken := s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"})
	if resetToken.Status != http.StatusAccepted {
		t.Fatalf("reset request: %d", resetToken.Status)
	}
	reset := s.linkToken("ada@example.com", domain.MailResetPassword)
	verify := s.linkToken("ada@example.com", domain.MailVerifyEmail)

	for _, path := range []string{"/auth/email-verification", "/auth/password-reset"} {
		p := wantProblem(t, s.do("POST", path, map[string]string{"email": "not an email"}), http.StatusBadRequest, "validation_failed")
		if got := p.Fields(); len(got) != 1 || got[0] != "email" {
			t.Errorf("%s: fields %v, want [email]", path, got)
		}
		wantProblem(t, s.do("POST", path, `{"email":"a@example.com","extra":1}`), http.StatusBadRequest, "unknown_field")
		wantProblem(t, s.do("POST", path, `{"email":`), http.StatusBadRequest, "malformed_json")
	}
	// Every token that cannot serve is the same answer: missing, empty,
	// malformed, unknown, or of the other purpose.
	for name, body := range map[string]string{
		"missing":       `{}`,
		"empty":         `{"token":""}`,
		"malformed":     `{"token":"abc"}`,
		"unknown":       `{"token":"` + strings.Repeat("A", 43) + `"}`,
		"other purpose": `{"token":"` + reset + `"}`,
	} {
		t.Run("verify/"+name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/auth/email-verification/confirm", body), http.StatusBadRequest, "invalid_token")
		})
	}
	for name, token := range map[string]string{"unknown": strings.Repeat("A", 43), "other purpose": verify, "malformed": "x"} {
		t.Run("reset/"+name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/auth/password-reset/confirm",
				map[string]string{"token": token, "password": "a brand new passphrase"}), http.StatusBadRequest, "invalid_token")
		})
	}
	// Both tokens still serve after all of that.
	wantJSON(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": verify}), http.StatusOK, &userBody{})
	if res := s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": reset, "password": "a brand new passphrase"}); res.Status != http.StatusNoContent {
		t.Errorf("reset after refusals: %d %s", res.Status, res.Body)
	}
}

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	u, tokens := s.customer("Ada", "ada@example.com")

	for _, email := range []string{"ada@example.com", "nobody@example.com"} {
		res := s.do("POST", "/auth/password-reset", map[string]string{"email": email})
		if res.Status != http.StatusAccepted || len(res.Body) != 0 {
			t.Errorf("reset request for %s: %d %q, want 202 and no body", email, res.Status, res.Body)
		}
	}
	token := s.linkToken("ada@example.com", domain.MailResetPassword)
	if n := len(s.mailsTo("nobody@example.com", domain.MailResetPassword)); n != 0 {
		t.Errorf("%d reset messages to an email no account has", n)
	}

	// A weak password is refused and leaves the token usable.
	p := wantProblem(t, s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": token, "password": "short"}),
		http.StatusBadRequest, "validation_failed")
	if got := p.Fields(); len(got) != 1 || got[0] != "password" {
		t.Errorf("fields %v, want [password]", got)
	}
	const newPassword = "a brand new passphrase"
	res := s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": token, "password": newPassword})
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("reset: %d %s, want 204", res.Status, res.Body)
	}
	wantProblem(t, s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": token, "password": newPassword}),
		http.StatusBadRequest, "invalid_token")

	// The old password and the old session are gone; the new password
	// works, and the email now counts as verified.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}),
		http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tokens.RefreshToken}),
		http.StatusUnauthorized, "invalid_refresh_token")
	signedIn := s.login("ada@example.com", newPassword)
	if !signedIn.User.EmailVerified || signedIn.User.ID != u.ID {
		t.Errorf("after reset: %+v, want ada, verified", signedIn.User)
	}
	s.deliver()
	if n := len(s.mailsTo("ada@example.com", domain.MailPasswordChanged)); n != 1 {
		t.Errorf("%d password-changed notices, want 1", n)
	}
}

func TestPasswordReset_new_request_voids_the_earlier_link(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"})
	first := s.linkToken("ada@example.com", domain.MailResetPassword)
	s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"})
	second := s.linkToken("ada@example.com", domain.MailResetPassword)
	wantProblem(t, s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": first, "password": "a brand new passphrase"}),
		http.StatusBadRequest, "invalid_token")
	if res := s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": second, "password": "a brand new passphrase"}); res.Status != http.StatusNoContent {
		t.Errorf("the latest link: %d %s, want 204", res.Status, res.Body)
	}
}

func TestLogin_unverified_when_verification_is_required(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRequireEmailVerification())
	s.register("Ada", "ada@example.com")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}),
		http.StatusForbidden, "email_not_verified")
	// A wrong password is the usual 401: the 403 tells nothing to someone
	// who does not know the password.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "wrong password!"}),
		http.StatusUnauthorized, "invalid_credentials")
	token := s.linkToken("ada@example.com", domain.MailVerifyEmail)
	wantJSON(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": token}), http.StatusOK, &userBody{})
	s.login("ada@example.com", custPassword)
}

func TestDisabledAccount(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	u, tokens := s.customer("Ada", "ada@example.com")

	// The user may send its current status, not change it.
	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"disabled": false, "emailVerified": false},
		withToken(tokens.AccessToken)), http.StatusOK, &userBody{})
	wantProblem(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"emailVerified": true}, withToken(tokens.AccessToken)),
		http.StatusForbidden, "forbidden")

	var disabled userBody
	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK, &disabled)
	if !disabled.Disabled {
		t.Fatalf("after disabling: %+v", disabled)
	}
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}),
		http.StatusForbidden, "account_disabled")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "wrong password!"}),
		http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tokens.RefreshToken}),
		http.StatusUnauthorized, "invalid_refresh_token")
	// No reset link goes to a disabled account.
	s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"})
	s.deliver()
	if n := len(s.mailsTo("ada@example.com", domain.MailResetPassword)); n != 0 {
		t.Errorf("%d reset messages to a disabled account", n)
	}

	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"disabled": false, "emailVerified": true}, withToken(admin)), http.StatusOK, &disabled)
	if disabled.Disabled || !disabled.EmailVerified {
		t.Errorf("after enabling and verifying: %+v", disabled)
	}
	s.login("ada@example.com", custPassword)
}

func TestLastAdmin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	root := s.login(adminEmail, adminPassword).User

	wantProblem(t, s.do("DELETE", "/api/users/"+root.ID, nil, withToken(admin)), http.StatusConflict, "last_admin")
	wantProblem(t, s.do("PUT", "/api/users/"+root.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusConflict, "last_admin")
	wantProblem(t, s.do("PUT", "/api/users/"+root.ID, map[string]any{"profiles": []string{"ROLE_CUSTOMER"}}, withToken(admin)),
		http.StatusConflict, "last_admin")

	// With a second admin, the first may go.
	var second userBody
	wantJSON(t, s.do("POST", "/api/users", map[string]any{"name": "Second", "email": "second@example.com",
		"password": custPassword, "profiles": []string{"ROLE_ADMIN"}}, withToken(admin)), http.StatusCreated, &second)
	wantJSON(t, s.do("PUT", "/api/users/"+root.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK, &userBody{})
	// Now the second is the last enabled one.
	secondToken := s.login("second@example.com", custPassword).AccessToken
	wantProblem(t, s.do("DELETE", "/api/users/"+second.ID, nil, withToken(secondToken)), http.StatusConflict, "last_admin")
	if res := s.do("DELETE", "/api/users/"+root.ID, nil, withToken(secondToken)); res.Status != http.StatusNoContent {
		t.Errorf("deleting a disabled admin: %d %s", res.Status, res.Body)
	}
}

func TestEmailChange_sends_verification_and_notice(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	u, tokens := s.customer("Ada", "ada@example.com")
	verify := s.linkToken("ada@example.com", domain.MailVerifyEmail)

	var changed userBody
	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"email": "ada@example.org"}, withToken(tokens.AccessToken)),
		http.StatusOK, &changed)
	if changed.EmailVerified {
		t.Errorf("a new email counts as verified: %+v", changed)
	}
	s.deliver()
	if n := len(s.mailsTo("ada@example.com", domain.MailEmailChanged)); n != 1 {
		t.Errorf("%d notices to the old address, want 1", n)
	}
	// The link sent to the old address does not verify the new one.
	wantProblem(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": verify}),
		http.StatusBadRequest, "invalid_token")
	token := s.linkToken("ada@example.org", domain.MailVerifyEmail)
	var verified userBody
	wantJSON(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": token}), http.StatusOK, &verified)
	if !verified.EmailVerified || verified.Email != "ada@example.org" {
		t.Errorf("verified: %+v", verified)
	}
}

func TestLinkRequest_language_is_kept_for_the_message(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	s.deliver()
	s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"},
		withHeader("Accept-Language", "de-CH, de;q=0.9, en;q=0.5"))
	s.deliver()
	mails := s.mailsTo("ada@example.com", domain.MailResetPassword)
	if len(mails) != 1 || mails[0].Lang != "de-CH, de;q=0.9, en;q=0.5" {
		t.Errorf("reset messages %+v, want one with the request's Accept-Language", mails)
	}
}
