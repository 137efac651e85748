package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// rootEmail is the admin who uses the console in these tests.
const rootEmail = "root@example.com"

// signedInAdmin registers the admin rootEmail and signs them in to the
// console.
func (e *env) signedInAdmin() *visitorSession {
	e.t.Helper()
	e.addUser(rootEmail, true)
	v := e.visitor()
	wantRedirect(e.t, v.signIn("/admin/", rootEmail, custPassword), "/admin/")
	return v
}

// signedInUser signs email in at the account page, which opens a session
// of theirs for the console to show.
func (e *env) signedInUser(email string) *visitorSession {
	e.t.Helper()
	v := e.visitor()
	wantRedirect(e.t, v.signIn("/account/", email, custPassword), "/account/")
	return v
}

// auditTrail reads the whole audit trail through the use case, as the
// admin rootEmail.
func (e *env) auditTrail() []domain.AuditEvent {
	e.t.Helper()
	root := e.user(rootEmail)
	admin := &domain.Principal{UserID: root.ID, Profiles: root.Profiles}
	var out []domain.AuditEvent
	after := ""
	for {
		page, err := e.svc.Audit.List(context.Background(), admin, application.AuditListInput{Limit: "200", After: after})
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		after = string(page.Next)
	}
}

// wantAudited checks that the trail holds an event of typ with the admin
// rootEmail as actor and subject as subject (none when empty).
func (e *env) wantAudited(typ domain.AuditEventType, subject domain.UserID) {
	e.t.Helper()
	root := e.user(rootEmail).ID
	for _, ev := range e.auditTrail() {
		if ev.Type == typ && ev.ActorID == root && ev.SubjectID == subject {
			return
		}
	}
	e.t.Errorf("no %s event with the admin as actor and subject %q", typ, subject)
}

// sessionsOf counts the live sessions of email, as the admin rootEmail
// sees them (activeSessions asks as the account itself, which a disabled
// account cannot).
func (e *env) sessionsOf(email string) int {
	e.t.Helper()
	root := e.user(rootEmail)
	list, err := e.svc.Sessions.List(context.Background(), &domain.Principal{UserID: root.ID, Profiles: root.Profiles},
		string(e.user(email).ID))
	if err != nil {
		e.t.Fatal(err)
	}
	return len(list)
}

// pathOf is the console page of the account with email.
func (e *env) pathOf(email string) string { return "/admin/users/" + string(e.user(email).ID) }

// wantTiedError checks that the page shows msg for field, tied to it: an
// element id="<field>-error" that the field names in aria-describedby,
// and aria-invalid on the field.
func wantTiedError(t *testing.T, a answer, field, msg string) {
	t.Helper()
	if !strings.Contains(a.Body, `id="`+field+`-error"`) || !strings.Contains(a.Body, msg) {
		t.Errorf("no message %q for %s:\n%s", msg, field, a.Body)
	}
	tag := regexp.MustCompile(`<(input|select|fieldset)[^>]*\bid="` + regexp.QuoteMeta(field) + `"[^>]*>`).FindString(a.Body)
	if !regexp.MustCompile(`aria-describedby="[^"]*\b` + regexp.QuoteMeta(field) + `-error"`).MatchString(tag) {
		t.Errorf("the field %s is not described by its error: %s", field, tag)
	}
	if tag != "" && !strings.HasPrefix(tag, "<fieldset") && !strings.Contains(tag, `aria-invalid="true"`) {
		t.Errorf("the field %s is not aria-invalid: %s", field, tag)
	}
}

func wantBody(t *testing.T, a answer, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(a.Body, w) {
			t.Errorf("the page lacks %q:\n%s", w, a.Body)
		}
	}
}

var sessionRevokeAction = regexp.MustCompile(`action="(/admin/users/[0-9a-f]{24}/sessions/[0-9a-f]{32}/revoke)"`)

func TestAdmin_pages_render(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.enrolTOTP("ada@example.com")
	ada := e.pathOf("ada@example.com")

	users := v.get("/admin/users")
	wantPage(t, users, http.StatusOK, "Users")
	wantBody(t, users, `<a href="`+ada+`">ada@example.com</a>`, `<label for="emailPrefix">Email starts with</label>`,
		`aria-current="page">Users</a>`)
	user := v.get(ada)
	wantPage(t, user, http.StatusOK, "ada@example.com")
	wantBody(t, user, `<h2 id="edit-heading">Edit</h2>`, `<h2 id="sessions-heading">Sessions</h2>`,
		`id="profile-ROLE_CUSTOMER" name="profiles" value="ROLE_CUSTOMER" checked`, `>Disable</button>`,
		`href="`+ada+`/reset-mfa"`, `href="`+ada+`/delete"`, `value="Ada"`)
	for path, heading := range map[string]string{
		ada + "/delete":               "Delete ada@example.com?",
		ada + "/reset-mfa":            "Reset the second factors of ada@example.com?",
		ada + "/sessions/revoke-all":  "End every session of ada@example.com?",
		"/admin/audit":                "Audit trail",
		"/admin/keys":                 "Signing keys",
		"/admin/users?emailPrefix=ad": "Users",
	} {
		wantPage(t, v.get(path), http.StatusOK, heading)
	}
	wantBody(t, v.get(ada+"/delete"), `action="`+ada+`/delete"`, `>Delete the user</button>`, `href="`+ada+`">Cancel</a>`)
	keys := v.get("/admin/keys")
	wantBody(t, keys, `id="when-published" name="when" value="published" checked`, `id="when-now"`, `>Rotate now</button>`, "active (signs)")

	// Nothing of it changed anything.
	if u := e.user("ada@example.com"); u.Disabled || !u.MFAEnabled {
		t.Errorf("a GET changed the account: %+v", u)
	}
	wantRedirect(t, v.get("/admin/"), "/admin/users")
}

func TestAdmin_unknown_or_malformed_ids(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	unknown := "/admin/users/0123456789abcdef01234567"
	wantPage(t, v.get(unknown), http.StatusNotFound, "User not found")
	wantPage(t, v.get(unknown+"/delete"), http.StatusNotFound, "User not found")
	wantPage(t, v.post(unknown+"/disable", nil), http.StatusNotFound, "User not found")
	wantPage(t, v.post(unknown+"/delete", nil), http.StatusNotFound, "User not found")
	// A malformed id is 400, as the API's invalid_id.
	wantPage(t, v.get("/admin/users/nope"), http.StatusBadRequest, "User not found")
	wantPage(t, v.post("/admin/users/NOPE/enable", nil), http.StatusBadRequest, "User not found")
	wantPage(t, v.post(ada+"/sessions/0123456789abcdef0123456789abcdef/revoke", nil), http.StatusNotFound, "Session not found")
	wantPage(t, v.post(ada+"/sessions/x/revoke", nil), http.StatusBadRequest, "Session not found")
	wantPage(t, v.get("/admin/nowhere"), http.StatusNotFound, "Page not found")
}

func TestAdmin_users_paginate_by_50(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	for i := range 55 {
		e.addUser(fmt.Sprintf("user%02d@example.com", i), false)
	}
	rows := regexp.MustCompile(`<tr><th scope="row"><a href="/admin/users/[0-9a-f]{24}">`)
	first := v.get("/admin/users")
	wantPage(t, first, http.StatusOK, "Users")
	if n := len(rows.FindAllString(first.Body, -1)); n != 50 {
		t.Fatalf("%d users on the first page, want 50", n)
	}
	next := regexp.MustCompile(`href="(/admin/users\?after=[0-9a-f]{24})" rel="next"`).FindStringSubmatch(first.Body)
	if next == nil {
		t.Fatalf("no next page link:\n%s", first.Body)
	}
	second := v.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	wantPage(t, second, http.StatusOK, "Users")
	if n := len(rows.FindAllString(second.Body, -1)); n != 6 {
		t.Errorf("%d users on the second page, want 6 (56 in all)", n)
	}
	if strings.Contains(second.Body, `rel="next"`) {
		t.Error("the last page links a next one")
	}
	wantBody(t, second, `href="/admin/users" id="first-page"`)

	// The pages of a search keep it.
	search := v.get("/admin/users?emailPrefix=USER")
	if n := len(rows.FindAllString(search.Body, -1)); n != 50 {
		t.Fatalf("%d users on the first page of the search, want 50", n)
	}
	next = regexp.MustCompile(`href="(/admin/users\?after=[0-9a-f]{24}&amp;emailPrefix=USER)" rel="next"`).FindStringSubmatch(search.Body)
	if next == nil {
		t.Fatalf("no next page link that keeps the search:\n%s", search.Body)
	}
	rest := v.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if n := len(rows.FindAllString(rest.Body, -1)); n != 5 {
		t.Errorf("%d users on the second page of the search, want 5", n)
	}
	wantBody(t, rest, `href="/admin/users?emailPrefix=USER" id="first-page"`)

	// A cursor that is no id: the message, tied to the link that helps.
	bad := v.get("/admin/users?after=x%27--")
	wantPage(t, bad, http.StatusBadRequest, "Users")
	wantBody(t, bad, `id="after-error"`, `<a id="after" href="/admin/users">`, `href="#after"`,
		"This page link is not valid.")
}

func TestAdmin_users_search_by_email_prefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	for i := range 3 {
		e.addUser(fmt.Sprintf("ada%d@example.com", i), false)
	}
	e.addUser("bob@example.com", false)
	res := v.get("/admin/users?emailPrefix=ADA")
	wantPage(t, res, http.StatusOK, "Users")
	wantBody(t, res, "ada0@example.com", "ada2@example.com", `value="ADA"`)
	if strings.Contains(res.Body, "bob@example.com") || strings.Contains(res.Body, ">"+rootEmail+"</a>") {
		t.Errorf("the search shows accounts outside the prefix:\n%s", res.Body)
	}
	none := v.get("/admin/users?emailPrefix=zz")
	wantBody(t, none, "No user’s email starts with that.")

	// A search no email can start with: the use case's message, beside
	// the field, what was typed kept.
	bad := v.get("/admin/users?emailPrefix=ada+lovelace")
	wantPage(t, bad, http.StatusBadRequest, "Users")
	wantTiedError(t, bad, "emailPrefix", "The search must be printable ASCII without spaces.")
	wantBody(t, bad, `value="ada lovelace"`)
}

func TestAdmin_edits_a_user(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.addUser("bob@example.com", false)
	ada := e.pathOf("ada@example.com")
	e.signedInUser("ada@example.com")

	res := v.post(ada, url.Values{"name": {"Ada Lovelace"}, "email": {"ada@example.com"},
		"profiles": {"ROLE_CUSTOMER", "ROLE_ADMIN"}})
	wantRedirect(t, res, ada+"?done=saved")
	wantBody(t, v.get(ada+"?done=saved"), "The changes are saved.", `value="Ada Lovelace"`)
	u := e.user("ada@example.com")
	if u.Name != "Ada Lovelace" || !u.Profiles.Has(domain.ProfileAdmin) {
		t.Errorf("after the edit: %+v", u)
	}
	e.wantAudited(domain.AuditUserUpdated, e.user("ada@example.com").ID)
	// A change of profiles ends the account's sessions (the use case's
	// rule), with the admin as actor.
	if n := e.activeSessions("ada@example.com"); n != 0 {
		t.Errorf("%d sessions outlived the change of profiles", n)
	}
	e.wantAudited(domain.AuditSessionRevoked, e.user("ada@example.com").ID)

	// Bad input: the messages beside their fields, what was typed kept.
	bad := v.post(ada, url.Values{"name": {"  "}, "email": {"not-an-email"}})
	wantPage(t, bad, http.StatusBadRequest, "ada@example.com")
	wantTiedError(t, bad, "name", "The name must not be empty.")
	wantTiedError(t, bad, "email", "The email address")
	wantTiedError(t, bad, "profiles", "The account must hold at least one profile")
	wantBody(t, bad, `value="not-an-email"`, `href="#name"`, "<title>Error: ")
	taken := v.post(ada, url.Values{"name": {"Ada"}, "email": {"BOB@example.com"}, "profiles": {"ROLE_CUSTOMER"}})
	wantPage(t, taken, http.StatusConflict, "ada@example.com")
	wantTiedError(t, taken, "email", "Another account has this email address.")
	wantBody(t, taken, `value="BOB@example.com"`)
	if u := e.user("ada@example.com"); u.Name != "Ada Lovelace" || !u.Profiles.Has(domain.ProfileAdmin) {
		t.Errorf("a refused edit changed the account: %+v", u)
	}

	// The last enabled admin cannot demote themselves: the form says why.
	wantRedirect(t, v.post(ada, url.Values{"name": {"Ada"}, "email": {"ada@example.com"}, "profiles": {"ROLE_CUSTOMER"}}),
		ada+"?done=saved")
	last := v.post(e.pathOf(rootEmail), url.Values{"name": {"Ada"}, "email": {rootEmail}, "profiles": {"ROLE_CUSTOMER"}})
	wantPage(t, last, http.StatusConflict, rootEmail)
	wantBody(t, last, "This is the last enabled administrator")
	if !e.user(rootEmail).Profiles.Has(domain.ProfileAdmin) {
		t.Error("the last admin was demoted")
	}
}

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
