package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func TestAdmin_disables_enables_and_verifies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	e.signedInUser("ada@example.com")

	wantRedirect(t, v.post(ada+"/disable", nil), ada+"?done=disabled")
	page := v.get(ada + "?done=disabled")
	wantBody(t, page, "The account is disabled, and its sessions are ended.", `>Enable</button>`, "No active sessions.")
	if !e.user("ada@example.com").Disabled || e.sessionsOf("ada@example.com") != 0 {
		t.Error("the account is not disabled, or its sessions live on")
	}
	e.wantAudited(domain.AuditUserUpdated, e.user("ada@example.com").ID)
	e.wantAudited(domain.AuditSessionRevoked, e.user("ada@example.com").ID)

	wantRedirect(t, v.post(ada+"/enable", nil), ada+"?done=enabled")
	if e.user("ada@example.com").Disabled {
		t.Error("the account is still disabled")
	}
	wantRedirect(t, v.post(ada+"/verify-email", nil), ada+"?done=verified")
	if !e.user("ada@example.com").EmailVerified {
		t.Error("the email is not verified")
	}
	wantBody(t, v.get(ada+"?done=verified"), "The email address is marked as verified.")
	// The last enabled admin cannot disable themselves.
	last := v.post(e.pathOf(rootEmail)+"/disable", nil)
	wantPage(t, last, http.StatusConflict, rootEmail)
	if e.user(rootEmail).Disabled {
		t.Error("the last admin was disabled")
	}
}

func TestAdmin_revokes_sessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	phone := e.signedInUser("ada@example.com")
	e.signedInUser("ada@example.com")

	page := v.get(ada)
	actions := sessionRevokeAction.FindAllStringSubmatch(page.Body, -1)
	if len(actions) != 2 {
		t.Fatalf("%d revoke buttons, want 2:\n%s", len(actions), page.Body)
	}
	wantRedirect(t, v.post(actions[0][1], nil), ada+"?done=session-revoked")
	if n := e.activeSessions("ada@example.com"); n != 1 {
		t.Errorf("%d sessions left, want 1", n)
	}
	e.wantAudited(domain.AuditSessionRevoked, e.user("ada@example.com").ID)
	wantBody(t, v.get(ada+"?done=session-revoked"), "The session is ended.")

	wantBody(t, v.get(ada+"/sessions/revoke-all"), `action="`+ada+`/sessions/revoke-all"`, `>Revoke all sessions</button>`)
	wantRedirect(t, v.post(ada+"/sessions/revoke-all", nil), ada+"?done=sessions-revoked")
	if n := e.activeSessions("ada@example.com"); n != 0 {
		t.Errorf("%d sessions left after revoke all", n)
	}
	// The user's browser is signed out.
	wantRedirect(t, phone.get("/account/"), "/account/login")
}

func TestAdmin_revoking_their_own_session_signs_them_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	other := e.visitor()
	wantRedirect(t, other.signIn("/admin/", rootEmail, custPassword), "/admin/")
	root := e.pathOf(rootEmail)

	page := v.get(root)
	wantBody(t, page, "(this session)")
	own := regexp.MustCompile(`action="(` + regexp.QuoteMeta(root) + `/sessions/[0-9a-f]{32}/revoke)"><button type="submit" class="secondary" id="revoke-[0-9a-f]{32}">Revoke<span class="visually-hidden"> the session signed in at [^<]*\(this session\)`).
		FindStringSubmatch(page.Body)
	if own == nil {
		t.Fatalf("no revoke button for this session:\n%s", page.Body)
	}
	res := v.post(own[1], nil)
	wantRedirect(t, res, "/admin/login?done=session-ended")
	if v.cookie != nil {
		t.Error("the console cookie outlived its session")
	}
	wantBody(t, v.get("/admin/login?done=session-ended"), "Your session has ended. Sign in again.")
	// The other session lives on.
	wantPage(t, other.get("/admin/users"), http.StatusOK, "Users")

	// Revoke all on their own account: the same.
	wantRedirect(t, other.post(root+"/sessions/revoke-all", nil), "/admin/login?done=session-ended")
	wantRedirect(t, other.get("/admin/users"), "/admin/login?next=%2Fadmin%2Fusers")
	if n := e.activeSessions(rootEmail); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

func TestAdmin_resets_mfa_after_confirming(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.enrolTOTP("ada@example.com")
	ada := e.pathOf("ada@example.com")

	confirm := v.get(ada + "/reset-mfa")
	wantBody(t, confirm, `action="`+ada+`/reset-mfa"`, `id="confirm-reset-mfa">Reset MFA</button>`)
	if !e.user("ada@example.com").MFAEnabled {
		t.Fatal("the confirm page reset the factors")
	}
	wantRedirect(t, v.post(ada+"/reset-mfa", nil), ada+"?done=mfa-reset")
	if e.user("ada@example.com").MFAEnabled {
		t.Error("the second factor is still on")
	}
	e.wantAudited(domain.AuditMFAReset, e.user("ada@example.com").ID)
	wantBody(t, v.get(ada+"?done=mfa-reset"), "Every second factor of the account is removed")
}

func TestAdmin_deletes_after_confirming(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	adaID := e.addUser("ada@example.com", false).ID
	ada := e.pathOf("ada@example.com")

	wantRedirect(t, v.post(ada+"/delete", nil), "/admin/users?done=deleted")
	if _, err := e.store.Users().ByEmail(context.Background(), "ada@example.com"); err == nil {
		t.Error("the account is still there")
	}
	e.wantAudited(domain.AuditUserDeleted, adaID)
	wantBody(t, v.get("/admin/users?done=deleted"), "The user is deleted")
	wantPage(t, v.get(ada), http.StatusNotFound, "User not found")

	// The last enabled admin cannot delete themselves.
	last := v.post(e.pathOf(rootEmail)+"/delete", nil)
	wantPage(t, last, http.StatusConflict, rootEmail)
	wantBody(t, last, "This is the last enabled administrator")
}

func TestAdmin_sends_a_password_reset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	e.deliver()

	wantRedirect(t, v.post(ada+"/password-reset", nil), ada+"?done=reset-sent")
	e.link(e.deliver(), "ada@example.com", domain.MailResetPassword)
	e.wantAudited(domain.AuditPasswordResetRequested, e.user("ada@example.com").ID)
	wantBody(t, v.get(ada+"?done=reset-sent"), "A password reset link is on its way")

	// A disabled account gets no link: the page says why.
	wantRedirect(t, v.post(ada+"/disable", nil), ada+"?done=disabled")
	refused := v.post(ada+"/password-reset", nil)
	wantPage(t, refused, http.StatusConflict, "ada@example.com")
	wantBody(t, refused, "This account is disabled: enable it first.")
	if mails := e.deliver(); len(mails) != 0 {
		t.Errorf("%d messages for a disabled account", len(mails))
	}
}

// lockOut fails logins for email with a wrong password until the email is
// locked out.
func (e *env) lockOut(email string) {
	e.t.Helper()
	for range domain.LoginFreeFailures + 1 {
		_, err := e.svc.Auth.Login(context.Background(), application.LoginInput{Email: email, Password: "a wrong guess"})
		if _, locked := errors.AsType[*domain.TooManyAttemptsError](err); locked {
			return
		}
		if !errors.Is(err, domain.ErrInvalidCredentials) {
			e.t.Fatalf("login %s: %v", email, err)
		}
	}
	e.t.Fatalf("%s is not locked after %d wrong passwords", email, domain.LoginFreeFailures)
}

// locked reports whether email is locked out: its right password is
// refused unchecked.
func (e *env) locked(email string) bool {
	e.t.Helper()
	_, err := e.svc.Auth.Login(context.Background(), application.LoginInput{Email: email, Password: custPassword})
	_, locked := errors.AsType[*domain.TooManyAttemptsError](err)
	if err != nil && !locked {
		e.t.Fatalf("login %s: %v", email, err)
	}
	return locked
}

func TestAdmin_unlocks_sign_in(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.addUser("eve@example.com", false)
	ada := e.pathOf("ada@example.com")
	eve := e.signedInUser("eve@example.com")
	e.lockOut("ada@example.com")

	page := v.get(ada)
	wantBody(t, page, `action="`+ada+`/unlock"><button type="submit" class="secondary" id="unlock" aria-describedby="unlock-hint">Unlock sign-in</button>`,
		`<p class="hint" id="unlock-hint">Unlock sign-in clears the failed sign-in attempts`)

	// A non-admin's post is refused, and the lock-out holds.
	before := len(e.auditTrail())
	wantPage(t, eve.post(ada+"/unlock", nil), http.StatusForbidden, "Administrators only")
	if !e.locked("ada@example.com") {
		t.Fatal("a non-admin's post lifted the lock-out")
	}
	if n := len(e.auditTrail()); n != before+1 { // the refused login just made
		t.Errorf("%d events after a non-admin's post, want %d", n, before+1)
	}

	wantRedirect(t, v.post(ada+"/unlock", nil), ada+"?done=unlocked")
	wantBody(t, v.get(ada+"?done=unlocked"), "Failed sign-in attempts are cleared: the account can sign in again.")
	// The right password signs in at once.
	if !e.canLogin("ada@example.com", custPassword) {
		t.Error("the right password is refused after the unlock")
	}
	e.wantAudited(domain.AuditLoginUnlocked, e.user("ada@example.com").ID)

	// A disabled account is unlocked too, and says so the same way.
	e.lockOut("ada@example.com")
	wantRedirect(t, v.post(ada+"/disable", nil), ada+"?done=disabled")
	wantRedirect(t, v.post(ada+"/unlock", nil), ada+"?done=unlocked")
	_, err := e.svc.Auth.Login(context.Background(), application.LoginInput{Email: "ada@example.com", Password: custPassword})
	if !errors.Is(err, domain.ErrAccountDisabled) {
		t.Errorf("login of the disabled, unlocked account: %v, want account disabled", err)
	}
	// An unknown user.
	wantPage(t, v.post("/admin/users/0123456789abcdef01234567/unlock", nil), http.StatusNotFound, "User not found")
}

func TestAdmin_changing_their_own_email_asks_their_password(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCurrentPasswordRequired)
	v := e.signedInAdmin()
	root := e.pathOf(rootEmail)
	change := url.Values{"name": {"Ada"}, "email": {"boss@example.com"}, "profiles": {"ROLE_ADMIN"}}

	// The use case asks for it: the field appears with the message, the
	// new address kept.
	asked := v.post(root, change)
	wantPage(t, asked, http.StatusBadRequest, rootEmail)
	wantTiedError(t, asked, "currentPassword", "The current password is required to change the password or email.")
	wantBody(t, asked, `value="boss@example.com"`, `<label for="currentPassword">Your current password</label>`)

	change.Set("currentPassword", "not the password")
	wrong := v.post(root, change)
	wantPage(t, wrong, http.StatusUnauthorized, rootEmail)
	wantTiedError(t, wrong, "currentPassword", "The current password is not right.")
	if strings.Contains(wrong.Body, "not the password") {
		t.Error("the page shows the password typed")
	}

	// The right one: the email changes, which ends the admin's sessions,
	// this one among them.
	change.Set("currentPassword", custPassword)
	wantRedirect(t, v.post(root, change), "/admin/login?done=session-ended")
	if v.cookie != nil {
		t.Error("the cookie outlived the session")
	}
	if _, err := e.store.Users().ByEmail(context.Background(), "boss@example.com"); err != nil {
		t.Errorf("the email did not change: %v", err)
	}
}
