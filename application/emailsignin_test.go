package application_test

import (
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// emailCode asks for a sign-in code for email, runs the sender, and
// returns the code and the link's token of the one message sent, or
// empty strings when none was.
func (e *env) emailCode(t *testing.T, email string) (code, token string) {
	t.Helper()
	wantErr(t, e.svc.EmailSignIn.RequestCode(ctx, email), nil)
	sent := e.deliver(t)
	if len(sent) == 0 {
		return "", ""
	}
	if len(sent) != 1 {
		t.Fatalf("%d messages sent, want 1", len(sent))
	}
	m := sent[0]
	if m.Template != domain.MailEmailSignIn || m.To.String() != email {
		t.Fatalf("sent %s to %s, want %s to %s", m.Template, m.To, domain.MailEmailSignIn, email)
	}
	link, err := url.Parse(m.Data["link"])
	if err != nil || link.Path != "/account/magic" {
		t.Fatalf("link %q is not the magic link page's (%v)", m.Data["link"], err)
	}
	return m.Data["code"], link.Query().Get("token")
}

func otherLinkToken(token string) string {
	if token[0] == 'A' {
		return "B" + token[1:]
	}
	return "A" + token[1:]
}

func otherCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

func TestEmailSignIn_code_signs_in_once_with_otp_and_verifies_the_email(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada, _ := e.seed(t, "ada@example.com")
	code, token := e.emailCode(t, "ada@example.com")
	if !domain.WellFormedEmailCode(code) || !domain.WellFormedLinkToken(token) {
		t.Fatalf("code %q / token %q are not of the contract's form", code, token)
	}
	pair, err := tokensOf(e.svc.EmailSignIn.VerifyCode(ctx, "Ada@Example.com", code))
	wantErr(t, err, nil)
	if got := e.session(t, pair).AMR; !slices.Equal(got, domain.AMR{"otp"}) {
		t.Errorf("amr = %v, want [otp]", got)
	}
	if pair.User.ID != ada.ID || !pair.User.EmailVerified {
		t.Errorf("signed in %s, emailVerified %v; want %s, verified", pair.User.ID, pair.User.EmailVerified, ada.ID)
	}
	_, err = e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code)
	wantErr(t, err, domain.ErrInvalidEmailCode)
	// The link came with the code: one token, used.
	_, err = e.svc.EmailSignIn.VerifyLink(ctx, token)
	wantErr(t, err, domain.ErrInvalidEmailCode)
}

func TestEmailSignIn_link_signs_in_once(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	code, token := e.emailCode(t, "ada@example.com")
	pair, err := tokensOf(e.svc.EmailSignIn.VerifyLink(ctx, token))
	wantErr(t, err, nil)
	if got := e.session(t, pair).AMR; !slices.Equal(got, domain.AMR{"otp"}) {
		t.Errorf("amr = %v, want [otp]", got)
	}
	for _, try := range []func() error{
		func() error { _, err := e.svc.EmailSignIn.VerifyLink(ctx, token); return err },
		func() error { _, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code); return err },
	} {
		wantErr(t, try(), domain.ErrInvalidEmailCode)
	}
}

// Unknown, expired, malformed: one answer, and only a code checked
// against an account is counted.
func TestEmailSignIn_same_answer_for_every_bad_code(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	code, token := e.emailCode(t, "ada@example.com")
	if c, _ := e.emailCode(t, "nobody@example.com"); c != "" {
		t.Fatal("a code was mailed to an email no account has")
	}
	for name, try := range map[string]func() error{
		"unknown_email":  func() error { _, err := e.svc.EmailSignIn.VerifyCode(ctx, "nobody@example.com", code); return err },
		"malformed_code": func() error { _, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", "12 456"); return err },
		"malformed_mail": func() error { _, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada", code); return err },
		"unknown_link":   func() error { _, err := e.svc.EmailSignIn.VerifyLink(ctx, otherLinkToken(token)); return err },
		"malformed_link": func() error { _, err := e.svc.EmailSignIn.VerifyLink(ctx, "abc"); return err },
	} {
		if err := try(); !errors.Is(err, domain.ErrInvalidEmailCode) {
			t.Errorf("%s: %v, want ErrInvalidEmailCode", name, err)
		}
	}
	e.clock.Advance(domain.DefaultEmailCodeTTL)
	_, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code)
	wantErr(t, err, domain.ErrInvalidEmailCode)
}

func TestEmailSignIn_fifth_wrong_code_voids_it_and_counts_toward_the_lock_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	code, _ := e.emailCode(t, "ada@example.com")
	for range domain.MaxEmailCodeFailures - 1 {
		_, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", otherCode(code))
		wantErr(t, err, domain.ErrInvalidEmailCode)
	}
	// Four wrong codes leave it usable, and a right one clears the count.
	_, err := tokensOf(e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code))
	wantErr(t, err, nil)

	e.clock.Advance(2 * domain.DefaultMailBudget.MinInterval)
	code, token := e.emailCode(t, "ada@example.com")
	for range domain.MaxEmailCodeFailures {
		_, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", otherCode(code))
		wantErr(t, err, domain.ErrInvalidEmailCode)
	}
	// Five failures lock the email, as five wrong passwords would…
	_, err = e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code)
	if _, ok := errors.AsType[*domain.TooManyAttemptsError](err); !ok {
		t.Fatalf("right code after five wrong ones = %v, want TooManyAttemptsError", err)
	}
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
	if _, ok := errors.AsType[*domain.TooManyAttemptsError](err); !ok {
		t.Errorf("password login after five wrong codes = %v, want TooManyAttemptsError", err)
	}
	// …and void the code and its link.
	e.clock.Advance(domain.LoginBaseDelay + time.Second)
	_, err = e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code)
	wantErr(t, err, domain.ErrInvalidEmailCode)
	_, err = e.svc.EmailSignIn.VerifyLink(ctx, token)
	wantErr(t, err, domain.ErrInvalidEmailCode)
}

func TestEmailSignIn_new_request_voids_the_earlier_within_the_budget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMailBudget(domain.MailBudget{MinInterval: time.Minute, MaxPerHour: 5}))
	e.seed(t, "ada@example.com")
	first, firstLink := e.emailCode(t, "ada@example.com")
	// Within the minute the budget refuses: nothing sent, the first stays good.
	if c, _ := e.emailCode(t, "ada@example.com"); c != "" {
		t.Fatal("a second code was mailed within the budget's minute")
	}
	// A reset request shares the budget.
	wantErr(t, e.svc.Mail.RequestPasswordReset(ctx, "ada@example.com"), nil)
	if sent := e.deliver(t); len(sent) != 0 {
		t.Fatalf("a reset link was mailed within the minute after a code")
	}
	e.clock.Advance(time.Minute)
	second, _ := e.emailCode(t, "ada@example.com")
	if second == "" {
		t.Fatal("no code a minute later")
	}
	if first != second {
		_, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", first)
		wantErr(t, err, domain.ErrInvalidEmailCode)
	}
	_, err := e.svc.EmailSignIn.VerifyLink(ctx, firstLink)
	wantErr(t, err, domain.ErrInvalidEmailCode)
	_, err = tokensOf(e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", second))
	wantErr(t, err, nil)
}

func TestEmailSignIn_disabled_account_gets_no_code(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	grace, _ := e.seed(t, "grace@example.com")
	if _, err := e.store.Users().Update(ctx, grace.ID, func(u *domain.User) error {
		u.Disabled = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c, _ := e.emailCode(t, "grace@example.com"); c != "" {
		t.Error("a disabled account was mailed a code")
	}
}

func TestEmailSignIn_second_factor_follows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedMFA(t, "ada@example.com")
	e.deliver(t) // the notice of the factor
	code, _ := e.emailCode(t, "ada@example.com")
	res, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", code)
	wantErr(t, err, nil)
	if res.SecondStep == nil {
		t.Fatalf("result %+v, want a second step", res)
	}
	pair, err := e.loginCode(res.SecondStep.MFAToken, a.code(t, e))
	wantErr(t, err, nil)
	if got := e.session(t, pair).AMR; !slices.Equal(got, domain.AMR{"otp", "mfa"}) {
		t.Errorf("amr = %v, want [otp mfa]", got)
	}
}

func TestEmailSignIn_off(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *application.Config, _ *application.Deps) { c.EmailSignIn = false })
	e.seed(t, "ada@example.com")
	wantErr(t, e.svc.EmailSignIn.RequestCode(ctx, "ada@example.com"), domain.ErrEmailSignInOff)
	_, err := e.svc.EmailSignIn.VerifyCode(ctx, "ada@example.com", "123456")
	wantErr(t, err, domain.ErrEmailSignInOff)
	_, err = e.svc.EmailSignIn.VerifyLink(ctx, "x")
	wantErr(t, err, domain.ErrEmailSignInOff)
}

func withEmailSignUp(c *application.Config, _ *application.Deps) { c.EmailSignUp = true }

// USERD_EMAIL_SIGNUP: an email no account has is sent a code, within a
// budget of its own; its first right code creates the account, verified,
// and signs it in; the link of a later message signs that account in.
func TestEmailSignIn_sign_up(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmailSignUp, withMailBudget(domain.DefaultMailBudget))
	code, _ := e.emailCode(t, "new@example.com")
	if code == "" {
		t.Fatal("no code mailed to an email no account has, with sign-up on")
	}
	// Within the minute the address's budget refuses a second message.
	if c, _ := e.emailCode(t, "new@example.com"); c != "" {
		t.Fatal("a second code was mailed within the budget's minute")
	}
	if _, err := e.store.Users().ByEmail(ctx, "new@example.com"); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("an account exists before the code is used: %v", err)
	}
	_, err := e.svc.EmailSignIn.VerifyCode(ctx, "new@example.com", otherCode(code))
	wantErr(t, err, domain.ErrInvalidEmailCode)
	pair, err := tokensOf(e.svc.EmailSignIn.VerifyCode(ctx, "new@example.com", code))
	wantErr(t, err, nil)
	u := pair.User
	if u.Email != "new@example.com" || !u.EmailVerified || u.HasPassword() || !slices.Equal(u.Profiles, domain.Profiles{domain.ProfileCustomer}) {
		t.Errorf("the new account is %+v, want a verified customer without a password", u)
	}
	if got := e.session(t, pair).AMR; !slices.Equal(got, domain.AMR{"otp"}) {
		t.Errorf("amr = %v, want [otp]", got)
	}
	// The account's budget goes on from the address's: a request answered
	// after the code made the account, within the minute, sends nothing.
	if c, _ := e.emailCode(t, "new@example.com"); c != "" {
		t.Fatal("a code was mailed within the minute of the sign-up's code, once the account existed")
	}
	e.clock.Advance(time.Minute)
	_, token := e.emailCode(t, "new@example.com")
	pair, err = tokensOf(e.svc.EmailSignIn.VerifyLink(ctx, token))
	wantErr(t, err, nil)
	if pair.User.ID != u.ID {
		t.Errorf("the link signed in %s, want the account the code made, %s", pair.User.ID, u.ID)
	}
}

// A sign-up's link creates the account too; with sign-up off, such a
// message is never sent.
func TestEmailSignIn_sign_up_by_link_and_off(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withEmailSignUp)
	_, token := e.emailCode(t, "linked@example.com")
	pair, err := tokensOf(e.svc.EmailSignIn.VerifyLink(ctx, token))
	wantErr(t, err, nil)
	if pair.User.Email != "linked@example.com" || !pair.User.EmailVerified {
		t.Errorf("the link made %+v", pair.User)
	}
	off := newEnv(t)
	if c, _ := off.emailCode(t, "linked@example.com"); c != "" {
		t.Error("a code was mailed to an email no account has, with sign-up off")
	}
}
