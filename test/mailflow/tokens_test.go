package mailflow

import (
	"crypto/rand"
	"encoding/base64"
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

// TestEveryTokenErrorIsOneAnswer uses link tokens from delivered messages
// in every way that must not work: unknown, malformed, used, of the other
// purpose, voided by a newer reset, sent to an address the account no
// longer has, expired. Each is 400 invalid_token, the same answer from
// both routes, and none of them spends a token that is still good.
func TestEveryTokenErrorIsOneAnswer(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	node := startNode(t, smtpEnv(t.TempDir(), smtp.URL()))
	base := node.Base
	const email = "dorothy@example.com"
	u := kit.Register(t, base, "Dorothy Vaughan", email, userPassword)
	verifyToken := linkToken(t, waitMail(t, smtp, mailWait, "verification", to(email, subjectVerify)), "/account/verify-email")

	// Two resets: the second voids the first.
	resets := requestResets(t, smtp, base, email, 2)
	voided, resetToken := resets[0], resets[1]

	type attempt struct {
		name, token string
	}
	bad := []attempt{
		{"unknown", randomToken()},
		{"malformed", "not-a-token"},
		{"empty", ""},
		{"too_long", resetToken + "A"},
	}
	answers := map[string]string{}
	confirm := func(route, token string) kit.Reply {
		body := map[string]string{"token": token}
		if route == "/auth/password-reset/confirm" {
			body["password"] = "a-Good-Passphrase-1"
		}
		return kit.Send(t, http.MethodPost, base+route, body, "")
	}
	check := func(name, route, token string) {
		t.Helper()
		r := confirm(route, token)
		kit.Expect(t, name+" at "+route, r, http.StatusBadRequest, "invalid_token")
		answers[name+" at "+route] = problemText(t, r)
	}
	for _, route := range []string{"/auth/email-verification/confirm", "/auth/password-reset/confirm"} {
		for _, a := range bad {
			check(a.name, route, a.token)
		}
	}
	check("reset_token_for_verification", "/auth/email-verification/confirm", resetToken)
	check("verification_token_for_reset", "/auth/password-reset/confirm", verifyToken)
	check("reset_token_voided_by_a_newer_one", "/auth/password-reset/confirm", voided)

	// None of that spent the good tokens; a weak password does not either.
	r := kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": "1234"}, "")
	kit.Expect(t, "reset to a weak password", r, http.StatusBadRequest, "validation_failed")
	r = kit.Send(t, http.MethodPost, base+"/auth/email-verification/confirm", map[string]string{"token": verifyToken}, "")
	kit.Expect(t, "the verification token after the bad attempts", r, http.StatusOK, "")
	check("used_verification_token", "/auth/email-verification/confirm", verifyToken)
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": "dorothy-Fortran-1961"}, "")
	kit.Expect(t, "the reset token after the bad attempts", r, http.StatusNoContent, "")
	check("used_reset_token", "/auth/password-reset/confirm", resetToken)

	// Tokens sent to an address the account no longer has.
	kit.Login(t, base, email, "dorothy-Fortran-1961")
	resetToken = requestResets(t, smtp, base, email, 1)[0]
	admin := kit.Login(t, base, adminEmail, adminPassword)
	r = kit.Send(t, http.MethodPut, base+"/api/users/"+u.ID, map[string]any{"email": "dorothy.vaughan@example.org"}, admin.AccessToken)
	kit.Expect(t, "an admin changes the email", r, http.StatusOK, "")
	check("reset_token_of_the_former_address", "/auth/password-reset/confirm", resetToken)

	// All the same answer.
	var first string
	for name, a := range answers {
		if first == "" {
			first = a
		}
		if a != first {
			t.Errorf("%s: answer %s differs from %s", name, a, first)
		}
	}
}

// TestExpiredTokenIsInvalid: a reset link used after
// USERD_PASSWORD_RESET_TTL is invalid_token, and the password stays.
func TestExpiredTokenIsInvalid(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	env := smtpEnv(t.TempDir(), smtp.URL())
	env["USERD_PASSWORD_RESET_TTL"] = "1s"
	env["USERD_EMAIL_VERIFICATION_TTL"] = "1s"
	node := startNode(t, env)
	const email = "mary@example.com"
	kit.Register(t, node.Base, "Mary Jackson", email, userPassword)
	verifyToken := linkToken(t, waitMail(t, smtp, mailWait, "verification", to(email, subjectVerify)), "/account/verify-email")
	resetToken := requestResets(t, smtp, node.Base, email, 1)[0]
	// The tokens were issued before their messages arrived.
	time.Sleep(1500 * time.Millisecond)
	r := kit.Send(t, http.MethodPost, node.Base+"/auth/password-reset/confirm", map[string]string{"token": resetToken, "password": "mary-Wind-Tunnel-1958"}, "")
	kit.Expect(t, "an expired reset token", r, http.StatusBadRequest, "invalid_token")
	r = kit.Send(t, http.MethodPost, node.Base+"/auth/email-verification/confirm", map[string]string{"token": verifyToken}, "")
	kit.Expect(t, "an expired verification token", r, http.StatusBadRequest, "invalid_token")
	kit.Login(t, node.Base, email, userPassword)
}

// TestResetEndsTheLockOut: a completed reset clears the per-email login
// lock-out and verifies the email, as the contract says.
func TestResetEndsTheLockOut(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	node := startNode(t, smtpEnv(t.TempDir(), smtp.URL()))
	const email = "annie@example.com"
	kit.Register(t, node.Base, "Annie Easley", email, userPassword)
	for range 6 {
		kit.Send(t, http.MethodPost, node.Base+"/auth/login", map[string]string{"email": email, "password": "wrong-Guess-000"}, "")
	}
	r := kit.Send(t, http.MethodPost, node.Base+"/auth/login", map[string]string{"email": email, "password": userPassword}, "")
	kit.Expect(t, "login during the lock-out", r, http.StatusTooManyRequests, "too_many_attempts")
	token := requestResets(t, smtp, node.Base, email, 1)[0]
	const password = "annie-Centaur-Rocket-1"
	r = kit.Send(t, http.MethodPost, node.Base+"/auth/password-reset/confirm", map[string]string{"token": token, "password": password}, "")
	kit.Expect(t, "reset", r, http.StatusNoContent, "")
	if tok := kit.Login(t, node.Base, email, password); !tok.User.EmailVerified {
		t.Error("after a completed reset the email is not verified")
	}
}

// TestWhoGetsAMessage: the request routes answer 202 whoever asks, and
// send only to those the contract names: no message for an unknown email,
// a verification for an unverified account only, a reset for an enabled
// account only, nothing beyond the per-account budget (and a refused
// request voids no earlier link); an admin's
// registration sends a verification too. The links follow
// USERD_VERIFY_EMAIL_URL and USERD_RESET_PASSWORD_URL.
func TestWhoGetsAMessage(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	env := smtpEnv(t.TempDir(), smtp.URL())
	// The default budget: one message a minute per account.
	delete(env, "USERD_MAIL_MIN_INTERVAL")
	delete(env, "USERD_MAIL_MAX_PER_HOUR")
	const (
		verifyURL = "https://app.example.test/welcome?step=verify"
		resetURL  = "https://app.example.test/password/new"
	)
	env["USERD_VERIFY_EMAIL_URL"] = verifyURL
	env["USERD_RESET_PASSWORD_URL"] = resetURL
	node := startNode(t, env)
	base := node.Base
	admin := kit.Login(t, base, adminEmail, adminPassword)

	// An admin registers an account: a verification, with the app's link.
	const email = "evelyn@example.com"
	r := kit.Send(t, http.MethodPost, base+"/api/users",
		map[string]any{"name": "Evelyn Boyd", "email": email, "password": userPassword, "profiles": []string{"ROLE_CUSTOMER"}}, admin.AccessToken)
	kit.Expect(t, "an admin registers an account", r, http.StatusCreated, "")
	var u kit.User
	if err := json.Unmarshal(r.Body, &u); err != nil {
		t.Fatal(err)
	}
	v := waitMail(t, smtp, mailWait, "verification of the admin's registration", to(email, subjectVerify))
	if link, err := url.Parse(v.link); err != nil || !strings.HasPrefix(v.link, verifyURL+"&token=") || link.Query().Get("step") != "verify" ||
		!linkTokenPattern.MatchString(link.Query().Get("token")) {
		t.Errorf("verification link %q, want %s&token=…", v.link, verifyURL)
	}

	// Requests that send nothing: unknown emails, the verified admin, and
	// a second reset within the minute.
	for _, req := range []struct{ route, email string }{
		{"/auth/password-reset", "nobody@example.com"},
		{"/auth/email-verification", "nobody@example.com"},
		{"/auth/email-verification", adminEmail},
		{"/auth/password-reset", email},
		{"/auth/password-reset", email},
	} {
		r := kit.Send(t, http.MethodPost, base+req.route, map[string]string{"email": req.email}, "")
		kit.Expect(t, req.route+" "+req.email, r, http.StatusAccepted, "")
		if len(r.Body) != 0 {
			t.Errorf("%s %s: a body %q", req.route, req.email, r.Body)
		}
	}
	reset := waitMail(t, smtp, mailWait, "the reset within the budget", to(email, subjectReset))
	if link, err := url.Parse(reset.link); err != nil || !strings.HasPrefix(reset.link, resetURL+"?token=") ||
		!linkTokenPattern.MatchString(link.Query().Get("token")) {
		t.Errorf("reset link %q, want %s?token=…", reset.link, resetURL)
	}
	// The refused second request voided nothing: the link works.
	link, _ := url.Parse(reset.link)
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset/confirm",
		map[string]string{"token": link.Query().Get("token"), "password": "evelyn-Orbit-1962"}, "")
	kit.Expect(t, "reset with the link sent before the refused request", r, http.StatusNoContent, "")
	waitMail(t, smtp, mailWait, "the password-changed notice", to(email, subjectPasswordChanged))

	// A disabled account is sent no reset.
	r = kit.Send(t, http.MethodPut, base+"/api/users/"+u.ID, map[string]any{"disabled": true}, admin.AccessToken)
	kit.Expect(t, "disable the account", r, http.StatusOK, "")
	r = kit.Send(t, http.MethodPost, base+"/auth/password-reset", map[string]string{"email": email}, "")
	kit.Expect(t, "reset of a disabled account", r, http.StatusAccepted, "")

	kit.Eventually(t, 10*time.Second, "every request answered", func() bool { return backlog(t, base) == 0 })
	var got []string
	for _, m := range parseAll(t, smtp.Received()) {
		got = append(got, m.Subject+" → "+m.To)
	}
	want := []string{subjectVerify + " → " + email, subjectReset + " → " + email, subjectPasswordChanged + " → " + email}
	if !slices.Equal(got, want) {
		t.Errorf("messages %v, want %v", got, want)
	}
}

// requestResets asks n resets for email, one after the other, and returns
// the token of each message, in order.
func requestResets(t testing.TB, smtp smtpserver.Server, base, email string, n int) []string {
	t.Helper()
	before := countMail(t, smtp, to(email, subjectReset))
	var out []string
	for i := range n {
		r := kit.Send(t, http.MethodPost, base+"/auth/password-reset", map[string]string{"email": email}, "")
		kit.Expect(t, "POST /auth/password-reset", r, http.StatusAccepted, "")
		kit.Eventually(t, mailWait, "the reset message", func() bool { return countMail(t, smtp, to(email, subjectReset)) > before+i })
		ms := parseAll(t, smtp.Received())
		ms = slices.DeleteFunc(ms, func(m mail) bool { return !to(email, subjectReset)(m) })
		out = append(out, linkToken(t, ms[before+i], "/account/reset-password"))
	}
	return out
}

func countMail(t testing.TB, smtp smtpserver.Server, match func(mail) bool) int {
	t.Helper()
	n := 0
	for _, m := range parseAll(t, smtp.Received()) {
		if match(m) {
			n++
		}
	}
	return n
}

// problemText is a problem answer without what differs from one request
// to the next (its instance and request id).
func problemText(t testing.TB, r kit.Reply) string {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("not a problem: %s", r.Body)
	}
	delete(p, "instance")
	delete(p, "requestId")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Get("Content-Type") + " " + string(b)
}

// randomToken is a well-formed link token that nobody issued.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestRequireEmailVerification: with USERD_REQUIRE_EMAIL_VERIFICATION,
// the right password of an unverified account is 403
// email_not_verified (a wrong one still 401), until the link of the
// registration's message is followed.
func TestRequireEmailVerification(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	env := smtpEnv(t.TempDir(), smtp.URL())
	env["USERD_REQUIRE_EMAIL_VERIFICATION"] = "true"
	node := startNode(t, env)
	const email = "hedy@example.com"
	kit.Register(t, node.Base, "Hedy Lamarr", email, userPassword)
	r := kit.Send(t, http.MethodPost, node.Base+"/auth/login", map[string]string{"email": email, "password": userPassword}, "")
	kit.Expect(t, "login before the verification", r, http.StatusForbidden, "email_not_verified")
	if len(r.Body) > 0 && (strings.Contains(string(r.Body), "accessToken") || strings.Contains(string(r.Body), "refreshToken")) {
		t.Errorf("the refusal carries a token: %s", r.Body)
	}
	r = kit.Send(t, http.MethodPost, node.Base+"/auth/login", map[string]string{"email": email, "password": "wrong-Guess-000"}, "")
	kit.Expect(t, "a wrong password before the verification", r, http.StatusUnauthorized, "invalid_credentials")

	m := waitMail(t, smtp, mailWait, "verification", to(email, subjectVerify))
	token := linkToken(t, m, "/account/verify-email")
	r = postForm(t, node.Base+"/account/verify-email", url.Values{"token": {token}}, "same-origin")
	kit.Expect(t, "the verification form", r, http.StatusOK, "")
	if tok := kit.Login(t, node.Base, email, userPassword); !tok.User.EmailVerified {
		t.Error("login after the verification: emailVerified false")
	}
}
