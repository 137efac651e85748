package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// withAccountAudit records the application's audit events in log.
func withAccountAudit(log *memory.AuditLog) envOption {
	return func(s *envSettings) { s.deps.Stores.Audit = log }
}

// audited reports whether log holds an event of typ by actor about
// subject.
func audited(t *testing.T, log *memory.AuditLog, typ domain.AuditEventType, actor, subject domain.UserID) bool {
	t.Helper()
	events, err := log.List(context.Background(), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 1000},
		UserID: subject, Type: typ})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Type == typ && e.ActorID == actor && e.SubjectID == subject {
			return true
		}
	}
	return false
}

// wantField checks that a page shows message beside the input id, tied
// to it, and in the summary with a link to it.
func wantField(t *testing.T, a answer, id, message string) {
	t.Helper()
	for _, want := range []string{
		`id="` + id + `-error"`, `href="#` + id + `"`, message,
	} {
		if !strings.Contains(a.Body, want) {
			t.Errorf("the page lacks %s:\n%s", want, a.Body)
		}
	}
	input := regexp.MustCompile(`<input id="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindString(a.Body)
	if !strings.Contains(input, `aria-invalid="true"`) || !strings.Contains(input, id+`-error`) {
		t.Errorf("the input %s is not tied to its error: %s", id, input)
	}
}

// wantNotice checks the notice of a page.
func wantNotice(t *testing.T, a answer, notice string) {
	t.Helper()
	if !strings.Contains(a.Body, `<p class="notice" role="status">`+notice) {
		t.Errorf("no notice %q:\n%s", notice, a.Body)
	}
}

// wantDone follows the redirect of an action to its page, checks its
// notice and returns it.
func wantDone(t *testing.T, v *visitorSession, a answer, path, done, heading, notice string) answer {
	t.Helper()
	wantRedirect(t, a, path+"?done="+done)
	next := v.get(path + "?done=" + done)
	wantPage(t, next, http.StatusOK, heading)
	wantNotice(t, next, notice)
	return next
}

func TestAccount_every_page_renders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	for path, heading := range map[string]string{
		"/account/": "My account", "/account/password": "Password", "/account/mfa": "Two-step verification",
		"/account/passkeys": "Passkeys", "/account/sessions": "Sessions", "/account/tokens": "Access tokens",
	} {
		a := v.get(path)
		wantPage(t, a, http.StatusOK, heading)
		// The menu marks the page; every input has its label.
		if !strings.Contains(a.Body, `href="`+path+`" aria-current="page"`) {
			t.Errorf("%s: the menu does not mark the page", path)
		}
		for _, m := range regexp.MustCompile(`<input id="([^"]+)"[^>]*type="(?:text|email|password|checkbox)"`).FindAllStringSubmatch(a.Body, -1) {
			if !strings.Contains(a.Body, `<label for="`+m[1]+`">`) {
				t.Errorf("%s: the input %s has no label", path, m[1])
			}
		}
		if strings.Contains(a.Body, "<h3") || strings.Count(a.Body, "<h1>") != 1 {
			t.Errorf("%s: headings out of order", path)
		}
	}
	home := v.get("/account/")
	for _, want := range []string{`<dd id="profile-name">Ada</dd>`, `ada@example.com`, `action="/account/name"`,
		`action="/account/email"`, `<h2 id="profile-heading">Profile</h2>`} {
		if !strings.Contains(home.Body, want) {
			t.Errorf("the home page lacks %s", want)
		}
	}
	passkeys := v.get("/account/passkeys")
	for _, want := range []string{`data-passkey-register data-options="/account/passkeys/options" hidden`,
		"<noscript><p>Adding a passkey needs JavaScript", `id="add-passkey"`, `src="/account/assets/passkey.js?v=`} {
		if !strings.Contains(passkeys.Body, want) {
			t.Errorf("the passkeys page lacks %s", want)
		}
	}
}

func TestAccount_change_name(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")

	bad := v.post("/account/name", url.Values{"name": {strings.Repeat("x", 101)}})
	wantPage(t, bad, http.StatusBadRequest, "My account")
	wantField(t, bad, "name", "The name must be at most 100 characters.")
	if !strings.Contains(bad.Body, `value="`+strings.Repeat("x", 101)+`"`) {
		t.Error("the name typed is not kept")
	}

	home := wantDone(t, v, v.post("/account/name", url.Values{"name": {"Ada Lovelace"}}), "/account/", "name-changed",
		"My account", "Your name is changed.")
	if !strings.Contains(home.Body, `<dd id="profile-name">Ada Lovelace</dd>`) || e.user("ada@example.com").Name != "Ada Lovelace" {
		t.Error("the name did not change")
	}
	if !audited(t, audit, domain.AuditUserUpdated, u.ID, u.ID) {
		t.Error("no user.updated event by the user")
	}
}

func TestAccount_change_password(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	other := e.signedInUser("ada@example.com")
	const newPassword = "a-New-passphrase-42"

	for _, c := range []struct {
		name         string
		form         url.Values
		status       int
		field, error string
	}{
		{"wrong_current", url.Values{"currentPassword": {"not my password"}, "password": {newPassword}, "confirm": {newPassword}},
			http.StatusUnauthorized, "currentPassword", "The current password is not right."},
		{"no_current", url.Values{"password": {newPassword}, "confirm": {newPassword}},
			http.StatusBadRequest, "currentPassword", "The current password must not be empty."},
		{"weak", url.Values{"currentPassword": {custPassword}, "password": {"short"}, "confirm": {"short"}},
			http.StatusBadRequest, "newPassword", "The new password must be at least 8 characters."},
		{"common", url.Values{"currentPassword": {custPassword}, "password": {"password123"}, "confirm": {"password123"}},
			http.StatusBadRequest, "newPassword", "The new password is too common."},
		{"differ", url.Values{"currentPassword": {custPassword}, "password": {newPassword}, "confirm": {newPassword + "x"}},
			http.StatusBadRequest, "confirm", "The repeated password must be the same as the new password."},
	} {
		a := v.post("/account/password", c.form)
		wantPage(t, a, c.status, "Password")
		wantField(t, a, c.field, c.error)
		if strings.Contains(a.Body, "not my password") || strings.Contains(a.Body, newPassword) {
			t.Errorf("%s: a password is shown again", c.name)
		}
		if !e.canLogin("ada@example.com", custPassword) {
			t.Fatalf("%s: the password changed", c.name)
		}
	}
	if !audited(t, audit, domain.AuditLoginFailed, u.ID, u.ID) {
		t.Error("the wrong current password is not in the audit trail")
	}

	ok := v.post("/account/password", url.Values{"currentPassword": {custPassword}, "password": {newPassword},
		"confirm": {newPassword}})
	// Every session ended, this one too: the cookie goes, and the sign-in
	// page says why.
	wantRedirect(t, ok, "/account/login?done=password-changed")
	if v.cookie != nil {
		t.Error("the cookie outlived the password change")
	}
	signIn := v.get("/account/login?done=password-changed")
	wantPage(t, signIn, http.StatusOK, "Sign in")
	wantNotice(t, signIn, "Your password is changed")
	wantRedirect(t, other.get("/account/"), "/account/login")
	if e.canLogin("ada@example.com", custPassword) || !e.canLogin("ada@example.com", newPassword) {
		t.Error("the new password does not sign in, or the old one still does")
	}
	wantRedirect(t, v.signIn("/account/", "ada@example.com", newPassword), "/account/")
	if !audited(t, audit, domain.AuditUserUpdated, u.ID, u.ID) || !audited(t, audit, domain.AuditSessionRevoked, u.ID, u.ID) {
		t.Error("the change or the end of the sessions is not in the audit trail")
	}
}

func TestAccount_change_email(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	e.addUser("grace@example.com", false)
	v := e.signedInUser("ada@example.com")

	for _, c := range []struct {
		form         url.Values
		status       int
		field, error string
	}{
		{url.Values{"email": {"not an address"}, "currentPassword": {custPassword}}, http.StatusBadRequest,
			"email", "The email address "},
		{url.Values{"email": {"grace@example.com"}, "currentPassword": {custPassword}}, http.StatusConflict,
			"email", "Another account has this email address."},
		{url.Values{"email": {"ada@example.org"}, "currentPassword": {"wrong password"}}, http.StatusUnauthorized,
			"currentPassword", "The current password is not right."},
		{url.Values{"email": {"ada@example.org"}}, http.StatusBadRequest,
			"currentPassword", "The current password must not be empty."},
	} {
		a := v.post("/account/email", c.form)
		wantPage(t, a, c.status, "My account")
		wantField(t, a, c.field, c.error)
		if !strings.Contains(a.Body, `value="`+c.form.Get("email")+`"`) || strings.Contains(a.Body, "wrong password") {
			t.Errorf("%v: the email typed is not kept, or the password is", c.form)
		}
	}
	e.deliver()

	ok := v.post("/account/email", url.Values{"email": {"ada@example.org"}, "currentPassword": {custPassword}})
	wantRedirect(t, ok, "/account/login?done=email-changed")
	wantNotice(t, v.get("/account/login?done=email-changed"), "Your email address is changed")
	// The verification link goes to the new address.
	e.link(e.deliver(), "ada@example.org", domain.MailVerifyEmail)
	if u := e.user("ada@example.org"); u.EmailVerified {
		t.Error("the new address counts as verified")
	}
	wantRedirect(t, v.signIn("/account/", "ada@example.org", custPassword), "/account/")
	if home := v.get("/account/"); !strings.Contains(home.Body, "not verified yet") {
		t.Error("the home page does not say the address is not verified")
	}
}

// withMailBudget sets the account's mail budget.
func withMailBudget(b domain.MailBudget) envOption {
	return func(s *envSettings) { s.cfg.MailBudget = b }
}

// A change of email takes from the account's mail budget: the second
// within the minute is refused, with the wait beside the email and in
// Retry-After, and nothing changes.
func TestAccount_change_email_is_held_to_the_mail_budget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMailBudget(domain.DefaultMailBudget))
	e.addUser("ada@example.com", false)
	e.deliver()
	v := e.signedInUser("ada@example.com")
	wantRedirect(t, v.post("/account/email", url.Values{"email": {"ada@example.org"}, "currentPassword": {custPassword}}),
		"/account/login?done=email-changed")
	wantRedirect(t, v.signIn("/account/", "ada@example.org", custPassword), "/account/")
	a := v.post("/account/email", url.Values{"email": {"ada@example.com"}, "currentPassword": {custPassword}})
	wantPage(t, a, http.StatusTooManyRequests, "My account")
	wantField(t, a, "email", "Your account was sent as many messages as it may be for now. Try the change again in 1 minute.")
	if got := a.Header.Get("Retry-After"); got != "60" {
		t.Errorf("Retry-After %q, want 60", got)
	}
	if len(e.deliver()) != 2 {
		t.Error("want the two messages of the one change, nothing of the refused one")
	}
	if u := e.user("ada@example.org"); u.Email != "ada@example.org" {
		t.Errorf("the refused change moved the account to %s", u.Email)
	}
}

// A reset link mailed before a change of password on the account page is
// void after it.
func TestAccount_change_password_voids_the_reset_links(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	link := e.requestReset("ada@example.com")
	v := e.signedInUser("ada@example.com")
	const newPassword = "a-New-passphrase-42"
	wantRedirect(t, v.post("/account/password", url.Values{"currentPassword": {custPassword}, "password": {newPassword},
		"confirm": {newPassword}}), "/account/login?done=password-changed")
	wantPage(t, e.get(link), http.StatusOK, "Choose a new password") // a GET only shows the form
	wantInvalidLink(t, e.post(web.ResetPasswordPath, url.Values{"token": {tokenOf(t, link)},
		"password": {"thief-Passphrase-99"}, "confirm": {"thief-Passphrase-99"}}))
	if !e.canLogin("ada@example.com", newPassword) {
		t.Error("the old reset link changed the password")
	}
}

func TestAccount_actions_refuse_cross_origin_posts_and_gets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	other := e.signedInUser("ada@example.com")
	sid := signOutForm.FindStringSubmatch(v.get("/account/sessions").Body)[1]

	actions := map[string]url.Values{
		"/account/name":                          {"name": {"Mallory"}},
		"/account/email":                         {"email": {"mallory@example.com"}, "currentPassword": {custPassword}},
		"/account/password":                      {"currentPassword": {custPassword}, "password": {"mallory-Passphrase-1"}, "confirm": {"mallory-Passphrase-1"}},
		"/account/mfa/totp":                      {"currentPassword": {custPassword}},
		"/account/sessions/" + sid + "/sign-out": nil,
		"/account/sessions/sign-out-others":      {"understood": {"yes"}},
		"/account/recovery-codes.txt":            {"codes": {"abcde-12345"}},
		"/account/mfa/totp/confirm":              {"code": {"123456"}},
		"/account/mfa/totp/disable":              {"code": {"123456"}},
		"/account/mfa/recovery-codes":            {"code": {"123456"}},
		"/account/passkeys/options":              {"name": {"Laptop"}},
	}
	for path, form := range actions {
		if a := v.post(path, form, withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example")); a.Status != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d", path, a.Status)
		}
		if path == "/account/password" {
			continue // GET shows its form
		}
		a := v.get(path)
		if a.Status != http.StatusMethodNotAllowed || a.Header.Get("Allow") != "POST" {
			t.Errorf("GET %s: %d, Allow %q", path, a.Status, a.Header.Get("Allow"))
		}
	}
	u := e.user("ada@example.com")
	if n := e.activeSessions("ada@example.com"); u.Name != "Ada" || n != 2 || !e.canLogin("ada@example.com", custPassword) {
		t.Errorf("something changed: %+v", u)
	}
	wantPage(t, other.get("/account/"), http.StatusOK, "My account")
}

func TestAccount_limits_the_posts_that_check_a_secret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	limited, ok := e.pages.(interface{ LimitedByIP(*http.Request) bool })
	if !ok {
		t.Fatal("the pages do not say which requests the per-IP limit counts")
	}
	for path, want := range map[string]bool{
		"/account/password": true, "/account/email": true, "/account/mfa/totp": true, "/account/mfa/totp/confirm": true,
		"/account/mfa/totp/disable": true, "/account/mfa/recovery-codes": true,
		"/account/passkeys/options": true, "/account/passkeys/0123456789abcdef01234567/remove": true,
		"/account/passkeys/0123456789abcdef01234567/rename": false,
		"/account/name": false, "/account/sessions/sign-out-others": false, "/account/recovery-codes.txt": false,
	} {
		r, err := http.NewRequest(http.MethodPost, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := limited.LimitedByIP(r); got != want {
			t.Errorf("POST %s limited: %v, want %v", path, got, want)
		}
	}
	// The change of email may tell that an email is taken, as a
	// registration may: it takes from that allowance too.
	asRegistration, ok := e.pages.(interface{ LimitedAsRegistration(*http.Request) bool })
	if !ok {
		t.Fatal("the pages do not say which requests the registration allowance counts")
	}
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{http.MethodPost, "/account/email", true}, {http.MethodGet, "/account/email", false},
		{http.MethodPost, "/account/password", false}, {http.MethodPost, "/account/name", false},
	} {
		if got := asRegistration.LimitedAsRegistration(httptest.NewRequest(c.method, c.path, nil)); got != c.want {
			t.Errorf("%s %s as a registration: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

func TestAccount_current_password_guesses_lock_the_account_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	form := url.Values{"currentPassword": {"a guess"}, "password": {"a-New-passphrase-42"}, "confirm": {"a-New-passphrase-42"}}
	for range 20 {
		a := v.post("/account/password", form)
		if a.Status == http.StatusUnauthorized {
			continue
		}
		wantPage(t, a, http.StatusTooManyRequests, "Password")
		if a.Header.Get("Retry-After") == "" || !strings.Contains(a.Body, "<li>Too many failed attempts. Try again in ") {
			t.Errorf("the lock-out: Retry-After %q\n%s", a.Header.Get("Retry-After"), a.Body)
		}
		return
	}
	t.Fatal("20 wrong current passwords and no lock-out")
}

// The home page shows the account's metadata and appMetadata, indented,
// escaped, and offers no way to change them.
func TestAccount_home_shows_metadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	ada := e.user("ada@example.com")
	md, _ := domain.ParseMetadata([]byte(`{"theme":"<dark>","n":[1]}`), domain.MetadataMaxBytes)
	app, _ := domain.ParseMetadata([]byte(`{"plan":"pro"}`), domain.AppMetadataMaxBytes)
	if _, err := e.store.Users().Update(context.Background(), ada.ID, func(u *domain.User) error {
		u.Metadata, u.AppMetadata = md, app
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	home := e.signedInUser("ada@example.com").get("/account/")
	for _, want := range []string{
		"<pre id=\"profile-metadata\">{\n  &#34;n&#34;: [\n    1\n  ],\n  &#34;theme&#34;: &#34;&lt;dark&gt;&#34;\n}</pre>",
		"<pre id=\"profile-app-metadata\">{\n  &#34;plan&#34;: &#34;pro&#34;\n}</pre>",
	} {
		if !strings.Contains(home.Body, want) {
			t.Errorf("the home page lacks %q:\n%s", want, home.Body)
		}
	}
	if strings.Contains(home.Body, `name="metadata"`) || strings.Contains(home.Body, `name="appMetadata"`) {
		t.Error("the home page offers to change the metadata")
	}
}
