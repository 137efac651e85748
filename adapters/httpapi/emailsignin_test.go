package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/userd/userd/domain"
)

// emailCode asks for a sign-in code for email and returns the code and
// the link's token of the last message sent to it.
func (s *testServer) emailCode(email string) (code, token string) {
	s.t.Helper()
	if res := s.do("POST", "/auth/email-code", map[string]string{"email": email}); res.Status != http.StatusAccepted || len(res.Body) != 0 {
		s.t.Fatalf("code request: %d %q, want 202 and no body", res.Status, res.Body)
	}
	s.deliver()
	mails := s.mailsTo(email, domain.MailEmailSignIn)
	if len(mails) == 0 {
		s.t.Fatalf("no sign-in message to %s", email)
	}
	m := mails[len(mails)-1]
	link, err := url.Parse(m.Data["link"])
	if err != nil {
		s.t.Fatal(err)
	}
	return m.Data["code"], link.Query().Get("token")
}

func TestEmailSignIn_code_and_link(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	s.register("Grace", "grace@example.com")
	s.deliver()

	// 202 for an email no account has too, and nothing is sent to it.
	if res := s.do("POST", "/auth/email-code", map[string]string{"email": "nobody@example.com"}); res.Status != http.StatusAccepted {
		t.Errorf("request for an unknown email: %d, want 202", res.Status)
	}
	s.deliver()
	if n := len(s.mailsTo("nobody@example.com", domain.MailEmailSignIn)); n != 0 {
		t.Errorf("%d messages to an email no account has", n)
	}

	code, token := s.emailCode("ada@example.com")
	wrong := "000000"
	if code == wrong {
		wrong = "000001"
	}
	for name, res := range map[string]response{
		"wrong code":     s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": wrong}),
		"unknown email":  s.do("POST", "/auth/email-code/verify", map[string]string{"email": "nobody@example.com", "code": code}),
		"malformed code": s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": "12345"}),
		"unknown link":   s.do("POST", "/auth/magic-link/verify", map[string]string{"token": otherToken(token)}),
		"malformed link": s.do("POST", "/auth/magic-link/verify", map[string]string{"token": "abc"}),
	} {
		p := wantProblem(t, res, http.StatusUnauthorized, "invalid_code")
		if p.Detail == "" {
			t.Errorf("%s: no detail", name)
		}
	}
	var tb tokenBody
	wantJSON(t, s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": code}), http.StatusOK, &tb)
	if got := claimsOf(t, tb.AccessToken).AMR; !slices.Equal(got, []string{"otp"}) {
		t.Errorf("amr = %v, want [otp]", got)
	}
	if !tb.User.EmailVerified {
		t.Error("the email is not verified after a sign-in by its code")
	}
	wantProblem(t, s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": code}),
		http.StatusUnauthorized, "invalid_code")
	wantProblem(t, s.do("POST", "/auth/magic-link/verify", map[string]string{"token": token}), http.StatusUnauthorized, "invalid_code")

	// The link of Grace's message signs Grace in.
	_, token = s.emailCode("grace@example.com")
	wantJSON(t, s.do("POST", "/auth/magic-link/verify", map[string]string{"token": token}), http.StatusOK, &tb)
	if tb.User.Email != "grace@example.com" || !slices.Equal(claimsOf(t, tb.AccessToken).AMR, []string{"otp"}) {
		t.Errorf("magic link signed in %s with amr %v", tb.User.Email, claimsOf(t, tb.AccessToken).AMR)
	}
}

// otherToken is a well-formed token other than token.
func otherToken(token string) string {
	if token[0] == 'A' {
		return "B" + token[1:]
	}
	return "A" + token[1:]
}

func TestEmailSignIn_bad_requests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	p := wantProblem(t, s.do("POST", "/auth/email-code", map[string]string{"email": "not an email"}), http.StatusBadRequest, "validation_failed")
	if got := p.Fields(); len(got) != 1 || got[0] != "email" {
		t.Errorf("fields %v, want [email]", got)
	}
	wantProblem(t, s.do("POST", "/auth/email-code/verify", `{"email":"a@example.com"}`), http.StatusBadRequest, "validation_failed")
	wantProblem(t, s.do("POST", "/auth/email-code/verify", `{"email":"a@example.com","code":"123456","x":1}`), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", "/auth/magic-link/verify", `{"token":`), http.StatusBadRequest, "malformed_json")
}

func TestEmailSignIn_second_factor(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")
	s.deliver()
	code, _ := s.emailCode("ada@example.com")
	res := s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": code})
	var ch mfaRequiredBody
	if err := json.Unmarshal(res.Body, &ch); err != nil || res.Status != http.StatusUnauthorized ||
		ch.Code != "mfa_required" || len(ch.MFAToken) != 43 {
		t.Fatalf("answer %d %s, want 401 mfa_required with an mfaToken (%v)", res.Status, res.Body, err)
	}
	var tb tokenBody
	wantJSON(t, s.loginMFA(ch.MFAToken, totpCode(t, secret, s.now())), http.StatusOK, &tb)
	if got := claimsOf(t, tb.AccessToken).AMR; !slices.Equal(got, []string{"otp", "mfa"}) {
		t.Errorf("amr = %v, want [otp mfa]", got)
	}
}

func TestEmailSignIn_off_routes_are_404(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, func(c *serverConfig) { c.app.EmailSignIn = false })
	for _, path := range []string{"/auth/email-code", "/auth/email-code/verify", "/auth/magic-link/verify"} {
		if res := s.do("POST", path, map[string]string{"email": "ada@example.com"}); res.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.Status)
		}
	}
}
