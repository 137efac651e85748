package web_test

import (
	"context" //nolint:gosec // G505: RFC 6238's TOTP is HMAC-SHA-1, as the authenticator apps compute it
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/totpgen"
)

// visitorSession is one browser on the pages: it keeps the console
// cookie the pages set, as a browser does, and sends it back.
type visitorSession struct {
	e      *env
	cookie *http.Cookie
	// sso is the OpenID provider's cookie, kept as a browser does too.
	sso *http.Cookie
	// magic is where a sign-in by email goes on (web.MagicNextCookie).
	magic *http.Cookie
}

func (e *env) visitor() *visitorSession { return &visitorSession{e: e} }

// keep takes the console cookie of an answer, as a browser does: a
// Max-Age of -1 deletes it.
func (v *visitorSession) keep(a answer) answer {
	for _, c := range (&http.Response{Header: a.Header}).Cookies() {
		var kept **http.Cookie
		switch c.Name {
		case web.ConsoleCookie:
			kept = &v.cookie
		case web.SSOCookie:
			kept = &v.sso
		case web.MagicNextCookie:
			kept = &v.magic
		default:
			continue
		}
		if c.MaxAge < 0 || c.Value == "" {
			*kept = nil
			continue
		}
		*kept = c
	}
	return a
}

func (v *visitorSession) withCookie() reqOption {
	return func(r *http.Request) {
		for _, c := range []*http.Cookie{v.cookie, v.sso, v.magic} {
			if c != nil {
				r.AddCookie(c) // name and value only, as a browser sends it back
			}
		}
	}
}

func (v *visitorSession) get(target string, opts ...reqOption) answer {
	v.e.t.Helper()
	return v.keep(v.e.get(target, append(opts, v.withCookie())...))
}

func (v *visitorSession) post(path string, form url.Values, opts ...reqOption) answer {
	v.e.t.Helper()
	return v.keep(v.e.post(path, form, append(opts, v.withCookie())...))
}

// signIn signs in with a password alone at the area's sign-in page.
func (v *visitorSession) signIn(prefix, email, password string) answer {
	v.e.t.Helper()
	return v.post(prefix+"login", url.Values{"email": {email}, "password": {password}})
}

// wantRedirect checks a 303 to target.
func wantRedirect(t testing.TB, a answer, target string) {
	t.Helper()
	if a.Status != http.StatusSeeOther || a.Header.Get("Location") != target {
		t.Fatalf("status %d to %q, want 303 to %q\n%s", a.Status, a.Header.Get("Location"), target, a.Body)
	}
}

// addUser registers an account (an admin when admin is true) with
// custPassword and returns it.
func (e *env) addUser(email string, admin bool) domain.User {
	e.t.Helper()
	if admin {
		u, _, err := e.svc.Users.EnsureAdmin(context.Background(), "Ada", email, custPassword)
		if err != nil {
			e.t.Fatal(err)
		}
		return u
	}
	u, err := e.svc.Users.Register(context.Background(), nil,
		application.RegisterInput{Name: "Ada", Email: email, Password: custPassword})
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// enrolTOTP gives the account of email a TOTP factor and returns its
// secret.
func (e *env) enrolTOTP(email string) string {
	e.t.Helper()
	ctx := context.Background()
	res, err := e.svc.Auth.Login(ctx, application.LoginInput{Email: email, Password: custPassword})
	if err != nil || res.Tokens == nil {
		e.t.Fatalf("login %s: %+v, %v", email, res, err)
	}
	p, err := e.svc.Auth.Authenticate(ctx, res.Tokens.Access.Token)
	if err != nil {
		e.t.Fatal(err)
	}
	pw := custPassword
	enrol, err := e.svc.MFA.BeginTOTP(ctx, p, &pw)
	if err != nil {
		e.t.Fatal(err)
	}
	code := totpgen.MustCode(e.t, enrol.Secret, e.clock.Now())
	if _, err := e.svc.MFA.ConfirmTOTP(ctx, p, &code); err != nil {
		e.t.Fatal(err)
	}
	return enrol.Secret
}

var hiddenMFAToken = regexp.MustCompile(`name="mfaToken" value="([^"]+)"`)

func TestConsole_signed_out_visitor_is_sent_to_the_sign_in_form(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.visitor()
	wantRedirect(t, v.get("/admin/"), "/admin/login")
	wantRedirect(t, v.get("/admin/users?after=x"), "/admin/login?next=%2Fadmin%2Fusers%3Fafter%3Dx")
	wantRedirect(t, v.get("/account/"), "/account/login")
	form := v.get("/admin/login")
	wantPage(t, form, http.StatusOK, "Sign in")
	for _, want := range []string{`action="/admin/login"`, `name="email"`, `name="password"`, `<label for="email">`, `<label for="password">`} {
		if !strings.Contains(form.Body, want) {
			t.Errorf("the sign-in form lacks %s", want)
		}
	}
	// The page's one script, allowed by this answer's nonce.
	nonce := regexp.MustCompile(`script-src 'nonce-([^']+)'`).FindStringSubmatch(form.Header.Get("Content-Security-Policy"))
	if nonce == nil || !strings.Contains(form.Body, `nonce="`+nonce[1]+`"`) {
		t.Errorf("the page's script does not carry the policy's nonce")
	}
}

func TestConsole_admin_signs_in_and_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	v := e.visitor()

	wrong := v.signIn("/admin/", "root@example.com", "not the password")
	wantPage(t, wrong, http.StatusUnauthorized, "Sign in")
	if !strings.Contains(wrong.Body, "The email address or the password is not right.") ||
		!strings.Contains(wrong.Body, `value="root@example.com"`) || strings.Contains(wrong.Body, "not the password") {
		t.Errorf("a wrong password: the message, the email kept, the password dropped:\n%s", wrong.Body)
	}

	ok := v.post("/admin/login", url.Values{"email": {"root@example.com"}, "password": {custPassword},
		"next": {"/admin/users?after=1"}})
	wantRedirect(t, ok, "/admin/users?after=1")
	c := v.cookie
	if c == nil {
		t.Fatal("no console cookie")
	}
	if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" ||
		c.MaxAge != int(web.ConsoleIdleTimeout/time.Second) {
		t.Errorf("cookie %+v: want Secure, HttpOnly, SameSite=Strict, Path=/, no Domain, Max-Age of the idle timeout", c)
	}
	if strings.Contains(c.Value, ".") {
		t.Error("the cookie holds a readable token: it must be sealed")
	}
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")
	// The account page shares the session.
	wantPage(t, v.get("/account/"), http.StatusOK, "My account")

	old := *v.cookie
	wantRedirect(t, v.post("/admin/logout", nil), "/admin/login?done=signed-out")
	if v.cookie != nil {
		t.Fatal("the cookie outlived the sign-out")
	}
	// The old cookie's session is ended, not just forgotten.
	v.cookie = &old
	wantRedirect(t, v.get("/admin/users"), "/admin/login?next=%2Fadmin%2Fusers")
	if sessions := e.activeSessions("root@example.com"); sessions != 0 {
		t.Errorf("%d sessions left after the sign-out", sessions)
	}
}

// activeSessions counts the account's live sessions.
func (e *env) activeSessions(email string) int {
	e.t.Helper()
	u := e.user(email)
	admin := &domain.Principal{UserID: u.ID, Profiles: u.Profiles}
	list, err := e.svc.Sessions.List(context.Background(), admin, string(u.ID))
	if err != nil {
		e.t.Fatal(err)
	}
	return len(list)
}

func TestConsole_next_never_leaves_the_area(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	for _, next := range []string{"https://evil.example/admin/", "//evil.example/admin/", "/account/", "/admin/login",
		"/admin/\\evil", "javascript:alert(1)", "",
		// Dot segments, which the redirect or the browser resolves into
		// another area: plain, percent-encoded (a browser reads %2e as a
		// dot), with an encoded slash, deeper down, and a backslash.
		"/admin/../account/", "/admin/%2e%2e/account/", "/admin/%2E%2E/account/", "/admin/.%2e/account/",
		"/admin/%2e./account/", "/admin/..%2faccount/", "/admin/users/../../account/", "/admin/./../account/",
		"/admin/..", "/admin/%2e%2e", "/admin/..\\account/", "/admin/%5c..%5caccount/", "/admin/%6cogin"} {
		v := e.visitor()
		res := v.post("/admin/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}, "next": {next}})
		wantRedirect(t, res, "/admin/")
	}
	for _, next := range []string{"/account/../admin/users", "/account/%2e%2e/admin/users"} {
		v := e.visitor()
		res := v.post("/account/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}, "next": {next}})
		wantRedirect(t, res, "/account/")
	}
	// A path of the area, with its query, still goes through.
	v := e.visitor()
	res := v.post("/admin/login", url.Values{"email": {"root@example.com"}, "password": {custPassword},
		"next": {"/admin/audit?user=a%2Fb&type=user.created"}})
	wantRedirect(t, res, "/admin/audit?user=a%2Fb&type=user.created")
}

func TestConsole_admin_with_totp_signs_in_with_a_code(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	secret := e.enrolTOTP("root@example.com")
	e.clock.Advance(time.Minute) // a fresh time step for the sign-in's code
	v := e.visitor()

	step := v.signIn("/admin/", "root@example.com", custPassword)
	wantPage(t, step, http.StatusOK, "Confirm it is you")
	if v.cookie != nil {
		t.Fatal("a cookie before the second factor")
	}
	m := hiddenMFAToken.FindStringSubmatch(step.Body)
	if m == nil || !strings.Contains(step.Body, `name="code"`) || !strings.Contains(step.Body, `action="/admin/login/code"`) {
		t.Fatalf("the second step has no code form:\n%s", step.Body)
	}
	token := m[1]

	wrong := v.post("/admin/login/code", url.Values{"mfaToken": {token}, "code": {"000000"}, "methods": {"totp,recovery_code"}})
	if totpgen.MustCode(t, secret, e.clock.Now()) == "000000" {
		t.Skip("the right code is 000000 this step") // one in a million
	}
	wantPage(t, wrong, http.StatusUnauthorized, "Confirm it is you")
	if !strings.Contains(wrong.Body, `id="code-error"`) || !strings.Contains(wrong.Body, `aria-invalid="true"`) {
		t.Errorf("a wrong code is not tied to its field:\n%s", wrong.Body)
	}
	wantRedirect(t, v.post("/admin/login/code", url.Values{"mfaToken": {token},
		"code": {totpgen.MustCode(t, secret, e.clock.Now())}}), "/admin/")
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")
}

func TestConsole_refuses_a_non_admin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	e.addUser("ada@example.com", false)

	// At the console's sign-in: 403, no cookie, no session left open.
	v := e.visitor()
	wantPage(t, v.signIn("/admin/", "ada@example.com", custPassword), http.StatusForbidden, "Administrators only")
	if v.cookie != nil {
		t.Error("a non-admin got a console cookie")
	}
	if n := e.activeSessions("ada@example.com"); n != 0 {
		t.Errorf("the refused sign-in left %d sessions", n)
	}

	// With the cookie of the account page: every console page and action
	// is 403, and nothing changes.
	wantRedirect(t, v.signIn("/account/", "ada@example.com", custPassword), "/account/")
	wantPage(t, v.get("/admin/users"), http.StatusForbidden, "Administrators only")
	wantPage(t, v.get("/admin/"), http.StatusForbidden, "Administrators only")
	wantPage(t, v.get("/account/"), http.StatusOK, "My account")
}

func TestConsole_cross_origin_post_and_get_change_nothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	v := e.visitor()
	wantRedirect(t, v.signIn("/admin/", "root@example.com", custPassword), "/admin/")

	// A form on another site that posts the sign-out: refused, the
	// session lives on.
	res := v.post("/admin/logout", nil, withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example"))
	if res.Status != http.StatusForbidden {
		t.Fatalf("cross-origin sign-out: %d", res.Status)
	}
	// A GET of the sign-out's address: 405, nothing done.
	get := v.get("/admin/logout")
	if get.Status != http.StatusMethodNotAllowed || get.Header.Get("Allow") != "POST" {
		t.Fatalf("GET of a form's action: %d, Allow %q", get.Status, get.Header.Get("Allow"))
	}
	// A cross-site sign-in form (login CSRF): refused before the password
	// is looked at.
	other := e.visitor()
	if res := other.post("/admin/login", url.Values{"email": {"root@example.com"}, "password": {custPassword}},
		withHeader("Sec-Fetch-Site", "cross-site")); res.Status != http.StatusForbidden || other.cookie != nil {
		t.Fatalf("cross-site sign-in: %d, cookie %v", res.Status, other.cookie)
	}
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")
	if n := e.activeSessions("root@example.com"); n != 1 {
		t.Errorf("%d sessions, want the one signed in", n)
	}
}

func TestConsole_session_ends_after_30_minutes_idle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	v := e.visitor()
	wantRedirect(t, v.signIn("/admin/", "root@example.com", custPassword), "/admin/")

	// 20 minutes: the access token (15 min) expired, the session did not;
	// the page refreshes it.
	e.clock.Advance(20 * time.Minute)
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")
	e.clock.Advance(29 * time.Minute)
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")

	stale := *v.cookie
	e.clock.Advance(web.ConsoleIdleTimeout)
	wantRedirect(t, v.get("/admin/users"), "/admin/login?expired=1&next=%2Fadmin%2Fusers")
	if v.cookie != nil {
		t.Error("an expired cookie was kept")
	}
	if n := e.activeSessions("root@example.com"); n != 0 {
		t.Errorf("the idle session was not ended: %d left", n)
	}
	expired := v.get("/admin/login?expired=1")
	if !strings.Contains(expired.Body, "Your session ended after a time without use.") {
		t.Error("the sign-in page does not say why")
	}
	// A copy of the cookie kept from before is dead too.
	v.cookie = &stale
	wantRedirect(t, v.get("/admin/users"), "/admin/login?expired=1&next=%2Fadmin%2Fusers")
}

func TestConsole_session_ends_8_hours_after_sign_in(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	v := e.visitor()
	wantRedirect(t, v.signIn("/admin/", "root@example.com", custPassword), "/admin/")
	for elapsed := time.Duration(0); elapsed+25*time.Minute < web.ConsoleAbsoluteTimeout; elapsed += 25 * time.Minute {
		e.clock.Advance(25 * time.Minute)
		wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")
	}
	e.clock.Advance(25 * time.Minute)
	wantRedirect(t, v.get("/admin/users"), "/admin/login?expired=1&next=%2Fadmin%2Fusers")
}

func TestConsole_forged_or_foreign_cookie_is_no_session(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("root@example.com", true)
	v := e.visitor()
	wantRedirect(t, v.signIn("/admin/", "root@example.com", custPassword), "/admin/")
	kept := *v.cookie
	good := kept.Value

	// Each byte of the sealed value matters.
	raw := []byte(good)
	raw[len(raw)/2] ^= 1
	for _, value := range []string{string(raw), "x", good[:len(good)-4]} {
		forged := kept //nolint:gosec // G124: a copy of the cookie the pages set, with its attributes
		forged.Value = value
		v.cookie = &forged
		wantRedirect(t, v.get("/admin/users"), "/admin/login?next=%2Fadmin%2Fusers")
	}
	// A session revoked from elsewhere (the API, another admin) ends the
	// cookie's too.
	v.cookie = &kept
	u := e.user("root@example.com")
	if err := e.svc.Sessions.RevokeAll(context.Background(), &domain.Principal{UserID: u.ID, Profiles: u.Profiles}, string(u.ID)); err != nil {
		t.Fatal(err)
	}
	wantRedirect(t, v.get("/admin/users"), "/admin/login?next=%2Fadmin%2Fusers")
}

func TestConsole_off_is_404(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withoutConsole)
	e.addUser("root@example.com", true)
	v := e.visitor()
	for _, path := range []string{"/admin/", "/admin/login", "/admin/users"} {
		wantPage(t, v.get(path), http.StatusNotFound, "Page not found")
	}
	wantPage(t, v.signIn("/admin/", "root@example.com", custPassword), http.StatusNotFound, "Page not found")
	// The account page stays.
	wantRedirect(t, v.signIn("/account/", "root@example.com", custPassword), "/account/")
}

func TestConsole_passkey_options_for_the_sign_in_script(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.visitor()
	// A passkey alone: a discoverable ceremony.
	res := v.post("/admin/login/passkey/options", url.Values{})
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(res.Body, `"ceremonyId":"`) || !strings.Contains(res.Body, `"publicKey":{`) {
		t.Fatalf("options: %d %s %s", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	// The second step of a sign-in that is gone: a message to show.
	res = v.post("/account/login/passkey/options", url.Values{"mfaToken": {strings.Repeat("A", 43)}})
	if res.Status != http.StatusUnauthorized || !strings.Contains(res.Body, `{"error":"The sign-in took too long. Sign in again."}`) {
		t.Fatalf("a stale mfaToken: %d %s", res.Status, res.Body)
	}
	// From another site: refused before a ceremony is made.
	if res := v.post("/admin/login/passkey/options", url.Values{}, withHeader("Sec-Fetch-Site", "cross-site")); res.Status != http.StatusForbidden {
		t.Fatalf("cross-site options: %d", res.Status)
	}
	// A finish with nothing in it: the sign-in form again, with why.
	res = v.post("/admin/login/passkey", url.Values{"ceremonyId": {"x"}, "credential": {"{}"}})
	wantPage(t, res, http.StatusUnauthorized, "Sign in")
	if !strings.Contains(res.Body, "The passkey was not accepted.") || v.cookie != nil {
		t.Errorf("a bad passkey answer:\n%s", res.Body)
	}
}
