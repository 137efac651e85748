package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// adminFixture is an admin, a customer ada with a session, a second
// factor and a failed login, and the console's pages and actions about
// her.
type adminFixture struct {
	e     *env
	admin *visitorSession
	ada   string
	// gets are the console's pages; posts its actions, each with a form
	// that would change something; postOnly the actions without a page.
	gets, postOnly []string
	posts          map[string]url.Values
}

func newAdminFixture(t *testing.T) adminFixture {
	t.Helper()
	e := newEnv(t)
	admin := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.signedInUser("ada@example.com")
	e.enrolTOTP("ada@example.com")
	if e.canLogin("ada@example.com", "a wrong guess") {
		t.Fatal("a wrong password signed in")
	}
	ada := e.pathOf("ada@example.com")
	sid := sessionRevokeAction.FindStringSubmatch(admin.get(ada).Body)
	if sid == nil {
		t.Fatal("no session to revoke")
	}
	f := adminFixture{e: e, admin: admin, ada: ada,
		gets: []string{"/admin/", "/admin/users", "/admin/users?emailPrefix=a", ada, ada + "/delete", ada + "/reset-mfa",
			ada + "/sessions/revoke-all", "/admin/audit", "/admin/keys"},
		posts: map[string]url.Values{
			ada:                          {"name": {"Mallory"}, "email": {"mallory@example.com"}, "profiles": {"ROLE_ADMIN"}},
			ada + "/disable":             nil,
			ada + "/verify-email":        nil,
			ada + "/password-reset":      nil,
			ada + "/unlock":              nil,
			ada + "/reset-mfa":           nil,
			ada + "/delete":              nil,
			ada + "/sessions/revoke-all": nil,
			sid[1]:                       nil,
			"/admin/keys/rotate":         {"when": {"now"}},
		},
	}
	e.deliver() // the registrations' messages: state counts those sent after
	f.postOnly = []string{ada + "/disable", ada + "/enable", ada + "/verify-email", ada + "/password-reset", ada + "/unlock", sid[1],
		"/admin/keys/rotate"}
	return f
}

// state is what the console's actions could change: ada's account,
// sessions and failed logins, the keys, the audit trail, and the messages
// sent since the last look.
func (f adminFixture) state() string {
	f.e.t.Helper()
	u := f.e.user("ada@example.com")
	keys, err := f.e.svc.Keys.ListAsOperator(context.Background())
	if err != nil {
		f.e.t.Fatal(err)
	}
	attempts, err := f.e.store.LoginAttempts().Get(context.Background(), u.Email)
	if err != nil {
		f.e.t.Fatal(err)
	}
	return fmt.Sprintf("%s %s %v %v %v %v sessions=%d failures=%d keys=%d events=%d mails=%d", u.Name, u.Email, u.Profiles,
		u.Disabled, u.EmailVerified, u.MFAEnabled, f.e.sessionsOf("ada@example.com"), attempts.Failures, len(keys),
		len(f.e.auditTrail()), len(f.e.deliver()))
}

func TestAdmin_non_admin_is_refused_everything(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t)
	f.e.addUser("eve@example.com", false)
	eve := f.e.signedInUser("eve@example.com")
	f.e.deliver()
	before := f.state()
	for _, path := range f.gets {
		wantPage(t, eve.get(path), http.StatusForbidden, "Administrators only")
	}
	for path, form := range f.posts {
		wantPage(t, eve.post(path, form), http.StatusForbidden, "Administrators only")
	}
	if after := f.state(); after != before {
		t.Errorf("a non-admin changed something:\n%s\n%s", before, after)
	}
	// Signed out: the sign-in page, nothing done.
	anon := f.e.visitor()
	for path, form := range f.posts {
		if res := anon.post(path, form); res.Status != http.StatusSeeOther || res.Header.Get("Location") != "/admin/login" {
			t.Errorf("POST %s signed out: %d to %q", path, res.Status, res.Header.Get("Location"))
		}
	}
	if after := f.state(); after != before {
		t.Errorf("a signed-out visitor changed something:\n%s\n%s", before, after)
	}
}

func TestAdmin_cross_origin_posts_are_refused(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t)
	before := f.state()
	for path, form := range f.posts {
		res := f.admin.post(path, form, withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example"))
		if res.Status != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d, want 403", path, res.Status)
		}
	}
	if after := f.state(); after != before {
		t.Errorf("a cross-site form changed something:\n%s\n%s", before, after)
	}
	// The admin's session was not touched.
	wantPage(t, f.admin.get("/admin/users"), http.StatusOK, "Users")
}

func TestAdmin_get_of_an_action_is_405(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t)
	before := f.state()
	for _, path := range f.postOnly {
		res := f.admin.get(path)
		if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST" {
			t.Errorf("GET %s: %d, Allow %q; want 405, POST", path, res.Status, res.Header.Get("Allow"))
		}
	}
	// The confirm steps are pages: their GET only asks.
	for _, path := range []string{f.ada + "/delete", f.ada + "/reset-mfa", f.ada + "/sessions/revoke-all"} {
		wantPage(t, f.admin.get(path), http.StatusOK, "")
	}
	if after := f.state(); after != before {
		t.Errorf("a GET changed something:\n%s\n%s", before, after)
	}
}
