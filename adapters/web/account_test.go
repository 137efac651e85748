package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// withAccountAudit records the application's audit events in log.
func withAccountAudit(log *memory.AuditLog) envOption {
	return func(s *envSettings) { s.deps.Audit = log }
}

// audited reports whether log holds an event of typ by actor about
// subject.
func audited(t *testing.T, log *memory.AuditLog, typ domain.AuditEventType, actor, subject domain.UserID) bool {
	t.Helper()
	events, err := log.List(context.Background(), domain.Page[domain.AuditID]{Limit: 1000})
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

// accountVisitor is a browser signed in to the account page of email,
// with a password alone.
func (e *env) accountVisitor(email string) *visitorSession {
	e.t.Helper()
	v := e.visitor()
	wantRedirect(e.t, v.signIn("/account/", email, custPassword), "/account/")
	return v
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
	v := e.accountVisitor("ada@example.com")
	for path, heading := range map[string]string{
		"/account/": "My account", "/account/password": "Password", "/account/mfa": "Two-step verification",
		"/account/passkeys": "Passkeys", "/account/sessions": "Sessions",
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
	v := e.accountVisitor("ada@example.com")

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
	v := e.accountVisitor("ada@example.com")
	other := e.accountVisitor("ada@example.com")
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
	v := e.accountVisitor("ada@example.com")

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

// totpSecret is the secret that the set-up page shows to type by hand.
var totpSecret = regexp.MustCompile(`<code id="totp-secret">([A-Z2-7 ]+)</code>`)

// qrPNG is the QR code of the set-up page.
var qrPNG = regexp.MustCompile(`<img src="data:image/png;base64,([^"]+)" alt="QR code for your authenticator app"`)

// recoveryCodes are the codes of the codes page.
var recoveryCodes = regexp.MustCompile(`<li><code>([a-z0-9]{5}-[a-z0-9]{5})</code></li>`)

// setUpTOTP begins a set-up at the two-step page and returns the secret
// shown.
func setUpTOTP(t *testing.T, v *visitorSession) string {
	t.Helper()
	a := v.post("/account/mfa/totp", url.Values{"currentPassword": {custPassword}})
	wantPage(t, a, http.StatusOK, "Set up your authenticator app")
	m := totpSecret.FindStringSubmatch(a.Body)
	q := qrPNG.FindStringSubmatch(a.Body)
	if m == nil || q == nil {
		t.Fatalf("no secret or no QR code:\n%s", a.Body)
	}
	raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(q[1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("the QR code is not a PNG: %v", err)
	}
	return strings.ReplaceAll(m[1], " ", "")
}

func TestAccount_totp_set_up_renew_and_turn_off(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.accountVisitor("ada@example.com")

	mfa := v.get("/account/mfa")
	if !strings.Contains(mfa.Body, `id="totp-set-up">Set up</button>`) {
		t.Fatalf("no set-up button:\n%s", mfa.Body)
	}
	wrong := v.post("/account/mfa/totp", url.Values{"currentPassword": {"wrong password"}})
	wantPage(t, wrong, http.StatusUnauthorized, "Two-step verification")
	wantField(t, wrong, "currentPassword", "The current password is not right.")

	secret := setUpTOTP(t, v)
	// A wrong first code: the form again, without the QR code, with the
	// way to start again.
	bad := v.post("/account/mfa/totp/confirm", url.Values{"code": {"12345"}})
	wantPage(t, bad, http.StatusBadRequest, "Set up your authenticator app")
	wantField(t, bad, "code", "The code is not right.")
	if qrPNG.MatchString(bad.Body) || totpSecret.MatchString(bad.Body) || !strings.Contains(bad.Body, `id="totp-restart"`) {
		t.Errorf("after a wrong code: the QR code again, or no way to start again:\n%s", bad.Body)
	}

	codes := v.post("/account/mfa/totp/confirm", url.Values{"code": {totpCode(t, secret, e.clock.Now())}})
	wantPage(t, codes, http.StatusOK, "Save your recovery codes")
	list := recoveryCodes.FindAllStringSubmatch(codes.Body, -1)
	if len(list) != domain.RecoveryCodeCount || !strings.Contains(codes.Body, "Keep these codes somewhere safe") ||
		!strings.Contains(codes.Body, `action="/account/recovery-codes.txt"`) {
		t.Fatalf("the codes page:\n%s", codes.Body)
	}
	if !audited(t, audit, domain.AuditTOTPEnabled, u.ID, u.ID) {
		t.Error("no mfa.totp_enabled event")
	}
	// The page says it is on; a second set-up is refused.
	mfa = v.get("/account/mfa")
	if !strings.Contains(mfa.Body, `id="totp-turn-off"`) || !strings.Contains(mfa.Body, "You have 10 unused recovery codes.") {
		t.Errorf("the two-step page after the set-up:\n%s", mfa.Body)
	}
	wantDone(t, v, v.post("/account/mfa/totp", url.Values{"currentPassword": {custPassword}}), "/account/mfa",
		"totp-on-already", "Two-step verification", "The authenticator app is on already.")

	// New recovery codes, proven by a code: the error tied to its own
	// input of the two.
	e.clock.Advance(30 * time.Second)
	renewBad := v.post("/account/mfa/recovery-codes", url.Values{"code": {"000000"}})
	wantPage(t, renewBad, http.StatusBadRequest, "Two-step verification")
	wantField(t, renewBad, "renew-code", "The code is not right.")
	if strings.Contains(renewBad.Body, `id="disable-code-error"`) {
		t.Error("the error shows beside the other form's code too")
	}
	renewed := v.post("/account/mfa/recovery-codes", url.Values{"code": {totpCode(t, secret, e.clock.Now())}})
	wantPage(t, renewed, http.StatusOK, "Save your recovery codes")
	if fresh := recoveryCodes.FindAllStringSubmatch(renewed.Body, -1); len(fresh) != domain.RecoveryCodeCount || fresh[0][1] == list[0][1] {
		t.Error("no new codes")
	}
	if !audited(t, audit, domain.AuditRecoveryCodesRenewed, u.ID, u.ID) {
		t.Error("no mfa.recovery_codes_renewed event")
	}

	// Signing in now asks for the code.
	other := e.visitor()
	wantPage(t, other.signIn("/account/", "ada@example.com", custPassword), http.StatusOK, "Confirm it is you")

	// Turning it off needs a code.
	e.clock.Advance(30 * time.Second)
	offBad := v.post("/account/mfa/totp/disable", url.Values{"code": {""}})
	wantPage(t, offBad, http.StatusBadRequest, "Two-step verification")
	wantField(t, offBad, "disable-code", "The code must not be empty.")
	wantDone(t, v, v.post("/account/mfa/totp/disable", url.Values{"code": {totpCode(t, secret, e.clock.Now())}}),
		"/account/mfa", "totp-off", "Two-step verification", "The authenticator app is turned off")
	if e.user("ada@example.com").MFAEnabled || !strings.Contains(v.get("/account/mfa").Body, `id="totp-set-up"`) {
		t.Error("still on")
	}
	if !audited(t, audit, domain.AuditTOTPDisabled, u.ID, u.ID) {
		t.Error("no mfa.totp_disabled event")
	}
}

func TestAccount_recovery_codes_download(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.accountVisitor("ada@example.com")
	codes := url.Values{"codes": {"abcde-12345", "FGHIJ-67890"}}

	a := v.post("/account/recovery-codes.txt", codes)
	if a.Status != http.StatusOK || a.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		a.Header.Get("Content-Disposition") != `attachment; filename="userd-recovery-codes.txt"` ||
		a.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", a.Status, a.Header)
	}
	if !strings.Contains(a.Body, "\nabcde-12345\nfghij-67890\n") || !strings.Contains(a.Body, "ada@example.com") {
		t.Errorf("the file:\n%s", a.Body)
	}
	for _, garbage := range []url.Values{
		{}, {"codes": {"<script>alert(1)</script>"}}, {"codes": {"abcde-12345", "abcde12345x"}},
		{"codes": {"abcde-12345\nhello"}}, {"codes": strings.Fields(strings.Repeat("abcde-12345 ", 11))},
	} {
		a := v.post("/account/recovery-codes.txt", garbage)
		wantPage(t, a, http.StatusBadRequest, "These are not recovery codes")
		if strings.Contains(a.Body, "alert(1)") {
			t.Error("the posted text is reflected")
		}
	}
	if res := v.get("/account/recovery-codes.txt"); res.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET of the download: %d", res.Status)
	}
	// Signed out: to the sign-in page, nothing answered.
	wantRedirect(t, e.visitor().post("/account/recovery-codes.txt", codes), "/account/login")
}

// addPasskey adds a passkey of key at the passkeys page as its script
// does: the options, the authenticator's answer, the form.
func addPasskey(t *testing.T, v *visitorSession, key *softauthn.Authenticator, name string) answer {
	t.Helper()
	o := v.post("/account/passkeys/options", url.Values{"name": {name}})
	if o.Status != http.StatusOK || o.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("options: %d %s", o.Status, o.Body)
	}
	var options struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(o.Body), &options); err != nil || options.CeremonyID == "" {
		t.Fatalf("options %s: %v", o.Body, err)
	}
	cred, err := key.Create(options.PublicKey, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	return v.post("/account/passkeys", url.Values{"ceremonyId": {options.CeremonyID}, "credential": {string(cred)},
		"name": {name}})
}

// jsonErrorOf is the message of a script's request that failed.
func jsonErrorOf(t *testing.T, a answer) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.Body), &body); err != nil {
		t.Fatalf("%d %s: %v", a.Status, a.Body, err)
	}
	return body.Error
}

var passkeyLink = regexp.MustCompile(`href="/account/passkeys/([0-9a-f]+)/remove"`)

func TestAccount_passkeys_add_and_remove(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.accountVisitor("ada@example.com")
	key := softauthn.New("http://localhost:8080")

	if a := v.post("/account/passkeys/options", url.Values{"name": {strings.Repeat("x", 65)}}); a.Status != http.StatusBadRequest ||
		jsonErrorOf(t, a) != "The name must be at most 64 characters." {
		t.Errorf("a long name: %d %s", a.Status, a.Body)
	}
	// A bad answer of the browser: the form again, with a message.
	bad := v.post("/account/passkeys", url.Values{"ceremonyId": {"nope"}, "credential": {"{}"}, "name": {"Laptop"}})
	wantPage(t, bad, http.StatusBadRequest, "Passkeys")
	if !strings.Contains(bad.Body, "The passkey was not accepted") || !strings.Contains(bad.Body, `value="Laptop"`) {
		t.Errorf("a refused passkey:\n%s", bad.Body)
	}

	list := wantDone(t, v, addPasskey(t, v, key, "Laptop"), "/account/passkeys", "passkey-added", "Passkeys",
		"The passkey is added.")
	m := passkeyLink.FindStringSubmatch(list.Body)
	if m == nil || !strings.Contains(list.Body, "<td>Laptop</td>") || !strings.Contains(list.Body, "<td>Never</td>") {
		t.Fatalf("the list:\n%s", list.Body)
	}
	if !audited(t, audit, domain.AuditPasskeyRegistered, u.ID, u.ID) {
		t.Error("no passkey.registered event")
	}
	// The passkey is a second factor now.
	if !e.user("ada@example.com").MFAEnabled {
		t.Error("the account has no second factor")
	}

	// Removing it: a page that asks, whose button posts.
	id := m[1]
	ask := v.get("/account/passkeys/" + id + "/remove")
	wantPage(t, ask, http.StatusOK, "Remove a passkey")
	if !strings.Contains(ask.Body, `action="/account/passkeys/`+id+`/remove"`) || !strings.Contains(ask.Body, "Laptop") {
		t.Errorf("the confirm page:\n%s", ask.Body)
	}
	wantPage(t, v.get("/account/passkeys/"+strings.Repeat("0", len(id))+"/remove"), http.StatusNotFound, "")
	wantDone(t, v, v.post("/account/passkeys/"+id+"/remove", nil), "/account/passkeys", "passkey-removed",
		"Passkeys", "The passkey is removed")
	if e.user("ada@example.com").MFAEnabled {
		t.Error("the account kept a second factor")
	}
	wantDone(t, v, v.post("/account/passkeys/"+id+"/remove", nil), "/account/passkeys", "passkey-gone",
		"Passkeys", "That passkey was removed already.")
	if !audited(t, audit, domain.AuditPasskeyRemoved, u.ID, u.ID) {
		t.Error("no passkey.removed event")
	}
}

func TestAccount_passkey_options_refusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)

	// Signed out: a JSON answer that the script shows, not a redirect.
	a := e.visitor().post("/account/passkeys/options", url.Values{"name": {"Laptop"}})
	if a.Status != http.StatusUnauthorized || !strings.Contains(jsonErrorOf(t, a), "Sign in again") {
		t.Errorf("signed out: %d %s", a.Status, a.Body)
	}
	// An account with a second factor, whose session signed in with the
	// password alone more than 10 minutes ago, must sign in again.
	v := e.accountVisitor("ada@example.com")
	e.enrolTOTP("ada@example.com")
	e.clock.Advance(domain.RecentSignIn + time.Minute)
	a = v.post("/account/passkeys/options", url.Values{"name": {"Laptop"}})
	if a.Status != http.StatusForbidden || !strings.Contains(jsonErrorOf(t, a), "Sign out and in again with your second factor") {
		t.Errorf("a stale session: %d %s", a.Status, a.Body)
	}
	// From another site: refused before anything.
	if a := v.post("/account/passkeys/options", nil, withHeader("Sec-Fetch-Site", "cross-site")); a.Status != http.StatusForbidden {
		t.Errorf("cross-site: %d", a.Status)
	}
}

var signOutForm = regexp.MustCompile(`action="/account/sessions/([0-9a-f]+)/sign-out"`)

func TestAccount_sessions_sign_out_one_and_the_others(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.accountVisitor("ada@example.com")
	other := e.accountVisitor("ada@example.com")

	list := v.get("/account/sessions")
	wantPage(t, list, http.StatusOK, "Sessions")
	forms := signOutForm.FindAllStringSubmatch(list.Body, -1)
	if len(forms) != 1 || strings.Count(list.Body, "This session") != 1 {
		t.Fatalf("want one other session with a button, and this one marked:\n%s", list.Body)
	}
	wantDone(t, v, v.post("/account/sessions/"+forms[0][1]+"/sign-out", nil), "/account/sessions", "session-ended",
		"Sessions", "That session is signed out.")
	wantRedirect(t, other.get("/account/"), "/account/login")
	wantPage(t, v.get("/account/"), http.StatusOK, "My account")
	if !audited(t, audit, domain.AuditSessionRevoked, u.ID, u.ID) {
		t.Error("no session.revoked event")
	}
	wantDone(t, v, v.post("/account/sessions/"+forms[0][1]+"/sign-out", nil), "/account/sessions", "session-gone",
		"Sessions", "That session had ended already.")
	wantPage(t, v.post("/account/sessions/nope/sign-out", nil), http.StatusNotFound, "")

	// Everywhere else: only once the box is ticked; this session lives on.
	third, fourth := e.accountVisitor("ada@example.com"), e.accountVisitor("ada@example.com")
	unticked := v.post("/account/sessions/sign-out-others", nil)
	wantPage(t, unticked, http.StatusBadRequest, "Sessions")
	wantField(t, unticked, "understood", "The box must be ticked")
	if n := e.activeSessions("ada@example.com"); n != 3 {
		t.Fatalf("%d sessions after an unticked form", n)
	}
	wantDone(t, v, v.post("/account/sessions/sign-out-others", url.Values{"understood": {"yes"}}), "/account/sessions",
		"others-ended", "Sessions", "Every other session is signed out.")
	wantRedirect(t, third.get("/account/"), "/account/login")
	wantRedirect(t, fourth.get("/account/"), "/account/login")
	if n := e.activeSessions("ada@example.com"); n != 1 {
		t.Errorf("%d sessions left, want this one", n)
	}
	wantPage(t, v.get("/account/sessions"), http.StatusOK, "Sessions")
}

func TestAccount_actions_refuse_cross_origin_posts_and_gets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.accountVisitor("ada@example.com")
	other := e.accountVisitor("ada@example.com")
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
}
