package mailflow

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
)

// mailWait bounds the wait for a message that a healthy server should
// have within the contract's 5 s.
const mailWait = 15 * time.Second

// TestAiosmtpdAccountLifecycle walks an account through every message
// userd sends, delivered to Debian's aiosmtpd: the verification sent at
// registration, followed as a person would (the page, then its form); a
// password reset asked for in German and completed through the API; the
// notice of the new password; a change of email with its verification and
// the notice to the old address. Then the audit trail records each step,
// and neither the trail nor the node's log shows a link token.
func TestAiosmtpdAccountLifecycle(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartAiosmtpd(t)
	env := smtpEnv(t.TempDir(), smtp.URL())
	// Every line a node can write, so that a token cannot hide below the
	// level of the log.
	env["USERD_LOG_LEVEL"] = "debug"
	node := startNode(t, env)
	base := node.Base
	var seenTokens []string

	const adaEmail = "ada@example.com"
	ada := kit.Register(t, base, "Ada Lovelace", adaEmail, userPassword)
	if ada.EmailVerified {
		t.Fatal("a new account starts verified")
	}

	// Registration: the verification message, well formed.
	verify := waitMail(t, smtp, mailWait, "verification message", to(adaEmail, subjectVerify))
	checkMessage(t, verify, adaEmail)
	// The address is not verified yet: the name is only what whoever
	// registered typed, and is not shown (see emailchange_test.go).
	if strings.Contains(verify.Text, "Ada Lovelace") || strings.Contains(verify.Header.Get("To"), "Ada") {
		t.Errorf("the verification message shows the name to an address not verified:\n%s", verify.Text)
	}
	verifyToken := linkToken(t, verify, "/account/verify-email")
	seenTokens = append(seenTokens, verifyToken)

	// The link's page, twice (a mail scanner first): neither uses the token.
	page := onNode(t, base, verify.link)
	for range 2 {
		r := kit.Send(t, http.MethodGet, page, nil, "")
		kit.Expect(t, "GET the verification page", r, http.StatusOK, "")
		checkPage(t, r)
		if !strings.Contains(string(r.Body), `name="token" value="`+verifyToken+`"`) {
			t.Fatalf("the verification page has no form with the token:\n%s", r.Body)
		}
	}
	if me := getMe(t, base, kit.Login(t, base, adaEmail, userPassword).AccessToken); me.EmailVerified {
		t.Fatal("following the link (GET) verified the email")
	}
	// The form, posted from another site, is refused and uses nothing;
	// posted from the page, it verifies.
	r := postForm(t, base+"/account/verify-email", url.Values{"token": {verifyToken}}, "cross-site")
	kit.Expect(t, "the verification form from another site", r, http.StatusForbidden, "")
	r = postForm(t, base+"/account/verify-email", url.Values{"token": {verifyToken}}, "same-origin")
	kit.Expect(t, "the verification form", r, http.StatusOK, "")
	checkPage(t, r)
	if !strings.Contains(string(r.Body), "verified") {
		t.Errorf("the verification form's answer does not say the email is verified:\n%s", r.Body)
	}
	session := kit.Login(t, base, adaEmail, userPassword)
	if me := getMe(t, base, session.AccessToken); !me.EmailVerified {
		t.Fatal("GET /api/users/me after the verification form: emailVerified false")
	}
	r = postForm(t, base+"/account/verify-email", url.Values{"token": {verifyToken}}, "same-origin")
	kit.Expect(t, "the verification form a second time", r, http.StatusBadRequest, "")
	r = kit.Send(t, http.MethodPost, base+"/auth/email-verification/confirm", map[string]string{"token": verifyToken}, "")
	kit.Expect(t, "confirm with the used verification token", r, http.StatusBadRequest, "invalid_token")

	// A reset asked for in German: the message is in German.
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset", map[string]string{"email": adaEmail}, "",
		"Accept-Language", "de-CH, de;q=0.9, en;q=0.5")
	kit.Expect(t, "POST /auth/password-reset", r, http.StatusAccepted, "")
	reset := waitMail(t, smtp, mailWait, "German reset message", to(adaEmail, "Passwort zurücksetzen"))
	checkMessage(t, reset, adaEmail)
	if !strings.Contains(reset.Text, "Passwort") || !strings.Contains(reset.HTML, `lang="de"`) {
		t.Errorf("the reset message asked for in German is not in German:\n%s", reset.Text)
	}
	resetToken := linkToken(t, reset, "/account/reset-password")
	seenTokens = append(seenTokens, resetToken)
	r = kit.Send(t, http.MethodGet, onNode(t, base, reset.link), nil, "")
	kit.Expect(t, "GET the reset page", r, http.StatusOK, "")
	checkPage(t, r)
	if !strings.Contains(string(r.Body), `value="`+resetToken+`"`) || !strings.Contains(string(r.Body), `type="password"`) {
		t.Fatalf("the reset page has no form with the token and a password field:\n%s", r.Body)
	}

	// A weak password is refused and leaves the token usable; a good one
	// is set, once.
	const newPassword = "lovelace-Engine-1843"
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": "short"}, "")
	kit.Expect(t, "reset to a weak password", r, http.StatusBadRequest, "validation_failed")
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": newPassword}, "")
	kit.Expect(t, "reset after the weak password", r, http.StatusNoContent, "")
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": newPassword + "x"}, "")
	kit.Expect(t, "reset with the used token", r, http.StatusBadRequest, "invalid_token")

	// The old password and the old session are over.
	r = kit.Send(t, http.MethodPost, base+"/auth/login", map[string]string{"email": adaEmail, "password": userPassword}, "")
	kit.Expect(t, "login with the old password", r, http.StatusUnauthorized, "invalid_credentials")
	r = kit.Send(t, http.MethodPost, base+"/auth/refresh-token", map[string]string{"refreshToken": session.RefreshToken}, "")
	kit.Expect(t, "refresh with the refresh token from before the reset", r, http.StatusUnauthorized, "")
	session = kit.Login(t, base, adaEmail, newPassword)

	notice := waitMail(t, smtp, mailWait, "password-changed notice", func(m mail) bool {
		return m.To == adaEmail && (m.Subject == subjectPasswordChanged || m.Subject == "Ihr Passwort wurde geändert")
	})
	checkMessage(t, notice, adaEmail)
	if notice.link != "" && strings.Contains(notice.link, "token=") {
		t.Errorf("the password-changed notice carries a token link: %s", notice.link)
	}

	// A change of email: a verification to the new address, a notice to
	// the old one; the account is unverified until the new link is used.
	const adaNew = "ada.lovelace@example.org"
	r = kit.Send(t, http.MethodPut, base+"/api/users/"+ada.ID, map[string]string{"email": adaNew}, session.AccessToken)
	kit.Expect(t, "change of email", r, http.StatusOK, "")
	if me := getMe(t, base, kit.Login(t, base, adaNew, newPassword).AccessToken); me.EmailVerified || me.Email != adaNew {
		t.Fatalf("after the change of email: %+v, want %s unverified", me, adaNew)
	}
	changed := waitMail(t, smtp, mailWait, "email-changed notice to the old address", to(adaEmail, subjectEmailChanged))
	checkMessage(t, changed, adaEmail)
	if !strings.Contains(changed.Text, adaNew) {
		t.Errorf("the notice to the old address does not name the new one:\n%s", changed.Text)
	}
	first := waitMail(t, smtp, mailWait, "verification of the new address", to(adaNew, subjectVerify))
	checkMessage(t, first, adaNew)
	seenTokens = append(seenTokens, linkToken(t, first, "/account/verify-email"))

	// Asked for again through the API route, and confirmed through it.
	r = kit.Send(t, http.MethodPost, base+"/auth/email-verification", map[string]string{"email": adaNew}, "")
	kit.Expect(t, "POST /auth/email-verification", r, http.StatusAccepted, "")
	var again mail
	kit.Eventually(t, mailWait, "a second verification message to the new address", func() bool {
		ms := parseAll(t, smtp.Received())
		ms = slices.DeleteFunc(ms, func(m mail) bool { return !to(adaNew, subjectVerify)(m) })
		if len(ms) < 2 {
			return false
		}
		again = ms[1]
		return true
	})
	againToken := linkToken(t, again, "/account/verify-email")
	seenTokens = append(seenTokens, againToken)
	r = kit.Send(t, http.MethodPost, base+"/auth/email-verification/confirm", map[string]string{"token": againToken}, "")
	kit.Expect(t, "confirm the new address", r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `"emailVerified":true`) || !strings.Contains(string(r.Body), adaNew) {
		t.Fatalf("confirm the new address: %s", r.Body)
	}

	// Six messages in all, each once.
	if got := parseAll(t, smtp.Received()); len(got) != 6 {
		var subjects []string
		for _, m := range got {
			subjects = append(subjects, m.Subject+" → "+m.To)
		}
		t.Errorf("%d messages, want 6: %v", len(got), subjects)
	}

	// The audit trail has each step, and no token.
	admin := kit.Login(t, base, adminEmail, adminPassword)
	events, raw := auditTrail(t, base, admin.AccessToken)
	for _, typ := range []string{
		"email_verification.requested", "email_verification.completed",
		"password_reset.requested", "password_reset.completed",
	} {
		if !hasEvent(events, typ, ada.ID) {
			t.Errorf("the audit trail has no %s about the account; it has: %v", typ, events)
		}
	}
	for _, tok := range seenTokens {
		if strings.Contains(raw, tok) {
			t.Errorf("the audit trail shows the link token %s", tok)
		}
		if strings.Contains(node.Log.String(), tok) {
			t.Errorf("the node's log shows the link token %s", tok)
		}
	}
}

// getMe reads GET /api/users/me.
func getMe(t testing.TB, base, accessToken string) kit.User {
	t.Helper()
	r := kit.Send(t, http.MethodGet, base+"/api/users/me", nil, accessToken)
	kit.Expect(t, "GET /api/users/me", r, http.StatusOK, "")
	var u kit.User
	if err := json.Unmarshal(r.Body, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// postForm posts a form as a browser does from a page of site
// (Sec-Fetch-Site: same-origin, cross-site, ...).
func postForm(t testing.TB, target string, form url.Values, site string) kit.Reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", site)
	return kit.Do(t, req)
}

// checkPage fails the test unless r is an HTML page with a content
// security policy and no referrer.
func checkPage(t testing.TB, r kit.Reply) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("page: Content-Type %q", ct)
	}
	if r.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("page: Referrer-Policy %q, want no-referrer", r.Header.Get("Referrer-Policy"))
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("page: Content-Security-Policy %q", csp)
	}
}
