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
	tag := regexp.MustCompile(`<(input|select|fieldset|textarea)[^>]*\bid="` + regexp.QuoteMeta(field) + `"[^>]*>`).FindString(a.Body)
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
		`href="`+ada+`/reset-mfa"`, `href="`+ada+`/delete"`, `value="Ada"`, `id="unlock"`)
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
	wantPage(t, v.post(unknown+"/unlock", nil), http.StatusNotFound, "User not found")
	// A malformed id is 400, as the API's invalid_id.
	wantPage(t, v.get("/admin/users/nope"), http.StatusBadRequest, "User not found")
	wantPage(t, v.post("/admin/users/NOPE/enable", nil), http.StatusBadRequest, "User not found")
	wantPage(t, v.post("/admin/users/NOPE/unlock", nil), http.StatusBadRequest, "User not found")
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
