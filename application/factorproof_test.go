package application_test

import (
	"errors"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// wantLockedOut checks that the email is locked out: a login with the
// right password is refused unchecked.
func wantLockedOut(t *testing.T, e *env, email string) {
	t.Helper()
	_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: seededPassword})
	if _, ok := errors.AsType[*domain.TooManyAttemptsError](err); !ok {
		t.Fatalf("login after the guesses: %v, want the email locked out", err)
	}
}

// TestPasskeys_registration_needs_the_person (issue 24, finding 1): a
// passkey is added only with the current password, whose wrong guesses
// count toward the lock-out; an account without a password needs a
// strong session instead.
func TestPasskeys_registration_needs_the_person(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		password *string
		session  func(e *env) domain.Session
		// noPassword seeds an account that has none (a passkey-only one).
		noPassword bool
		wantErr    error
	}{
		{name: "right_password", password: ptr(seededPassword)},
		{name: "no_password_sent", wantErr: &domain.ValidationError{}},
		{name: "empty_password", password: ptr(""), wantErr: &domain.ValidationError{}},
		{name: "wrong_password", password: ptr("a guess"), wantErr: domain.ErrInvalidCredentials},
		{name: "wrong_password_strong_session", password: ptr("a guess"), session: strongSession, wantErr: domain.ErrInvalidCredentials},
		{name: "strong_session_without_password", session: strongSession, wantErr: &domain.ValidationError{}},
		{name: "passwordless_account_recent_session", noPassword: true, session: recentSession},
		{name: "passwordless_account_aal2_session", noPassword: true, session: strongSession},
		{name: "passwordless_account_old_session", noPassword: true, session: oldSession, wantErr: domain.ErrRecentSignInRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u, p := e.seed(t, "ada@example.com")
			if tc.noPassword {
				_, err := e.store.Users().Update(ctx, u.ID, func(u *domain.User) error { u.PasswordHash = ""; return nil })
				wantErr(t, err, nil)
			}
			if tc.session != nil {
				p = withSession(p, tc.session(e))
			}
			opts, err := e.svc.Passkeys.BeginRegistration(ctx, p, tc.password)
			if verr, ok := tc.wantErr.(*domain.ValidationError); ok {
				if got, isV := errors.AsType[*domain.ValidationError](err); !isV || len(got.Fields) != 1 ||
					got.Fields[0].Field != application.FieldCurrentPassword {
					t.Fatalf("err = %v, want a validation error of currentPassword (%T)", err, verr)
				}
				return
			}
			wantErr(t, err, tc.wantErr)
			if tc.wantErr == nil && opts.CeremonyID == "" {
				t.Error("no ceremony begun")
			}
		})
	}
}

// TestPasskeys_registration_guesses_lock_the_account_out: a stolen token
// guessing at the password through the passkey route is locked out as a
// login is, and the guesses are in the audit trail.
func TestPasskeys_registration_guesses_lock_the_account_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, p := e.seed(t, "ada@example.com")
	for range domain.LoginFreeFailures {
		_, err := e.svc.Passkeys.BeginRegistration(ctx, p, ptr("a guess"))
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	_, err := e.svc.Passkeys.BeginRegistration(ctx, p, ptr(seededPassword))
	if _, ok := errors.AsType[*domain.TooManyAttemptsError](err); !ok {
		t.Fatalf("the right password after %d guesses: %v, want too many attempts", domain.LoginFreeFailures, err)
	}
	wantLockedOut(t, e, "ada@example.com")
}

// TestTOTP_enrolment_on_a_passkey_account_needs_a_strong_session: adding
// any factor to an account that has one already needs a session that
// used it (or signed in moments ago), password or not.
func TestTOTP_enrolment_on_a_passkey_account_needs_a_strong_session(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, p := e.seed(t, "ada@example.com")
	e.registerPasskey(t, p, softauthn.New(testOrigin))
	_, err := e.svc.MFA.BeginTOTP(ctx, withSession(p, oldSession(e)), ptr(seededPassword))
	wantErr(t, err, domain.ErrRecentSignInRequired)
	_, err = e.svc.MFA.BeginTOTP(ctx, withSession(p, strongSession(e)), ptr(seededPassword))
	wantErr(t, err, nil)
}

// TestPasskeys_Delete_needs_the_person (issue 24, finding 3): removing a
// passkey (the last one turns MFA off) takes the current password, or a
// session that signed in with a second factor.
func TestPasskeys_Delete_needs_the_person(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		session  func(e *env) domain.Session
		password *string
		wantErr  error
	}{
		{name: "aal2_session_alone", session: strongSession},
		{name: "aal2_session_and_right_password", session: strongSession, password: ptr(seededPassword)},
		{name: "aal2_session_and_wrong_password", session: strongSession, password: ptr("a guess"), wantErr: domain.ErrInvalidCredentials},
		{name: "recent_session_and_right_password", session: recentSession, password: ptr(seededPassword)},
		{name: "recent_session_without_password", session: recentSession, wantErr: &domain.ValidationError{}},
		{name: "recent_session_and_wrong_password", session: recentSession, password: ptr("a guess"), wantErr: domain.ErrInvalidCredentials},
		{name: "old_session_and_right_password", session: oldSession, password: ptr(seededPassword), wantErr: domain.ErrRecentSignInRequired},
		{name: "old_session_alone", session: oldSession, wantErr: domain.ErrRecentSignInRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, p := e.seed(t, "ada@example.com")
			pk := e.registerPasskey(t, p, softauthn.New(testOrigin))
			err := e.svc.Passkeys.Delete(ctx, withSession(p, tc.session(e)), string(pk.ID), tc.password)
			if _, ok := tc.wantErr.(*domain.ValidationError); ok {
				if _, isV := errors.AsType[*domain.ValidationError](err); !isV {
					t.Fatalf("err = %v, want a validation error", err)
				}
			} else {
				wantErr(t, err, tc.wantErr)
			}
			left, lerr := e.svc.Passkeys.List(ctx, p)
			wantErr(t, lerr, nil)
			if removed := len(left) == 0; removed != (tc.wantErr == nil) {
				t.Errorf("passkeys left %d, removed %v, want removed %v", len(left), removed, tc.wantErr == nil)
			}
		})
	}
}

// TestTOTP_code_guesses_lock_the_account_out (issue 24, finding 2): wrong
// codes sent to turn TOTP off or to renew the recovery codes count toward
// the email's lock-out, as in a login's second step.
func TestTOTP_code_guesses_lock_the_account_out(t *testing.T) {
	t.Parallel()
	for name, guess := range map[string]func(e *env, p *domain.Principal, code string) error{
		"disable": func(e *env, p *domain.Principal, code string) error {
			return e.svc.MFA.DisableTOTP(ctx, p, &code)
		},
		"renew_recovery_codes": func(e *env, p *domain.Principal, code string) error {
			_, err := e.svc.MFA.RenewRecoveryCodes(ctx, p, &code)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newAuditEnv(t, nil)
			a := e.seedMFA(t, "ada@example.com")
			for i := range domain.LoginFreeFailures {
				// A TOTP code's form and a recovery code's: both count.
				code := "000000"
				if i%2 == 1 {
					code = "aaaaa-bbbbb"
				}
				wantErr(t, guess(e.env, a.self, code), domain.ErrInvalidMFACode)
			}
			err := guess(e.env, a.self, totpCode(t, a.secret, e.clock.Now()))
			if _, ok := errors.AsType[*domain.TooManyAttemptsError](err); !ok {
				t.Fatalf("a right code after %d wrong ones: %v, want too many attempts", domain.LoginFreeFailures, err)
			}
			wantLockedOut(t, e.env, "ada@example.com")
			failed := 0
			want := domain.LoginFailedEvent(a.user.ID, a.user.ID, domain.CheckFactorCode, domain.FailureWrongCode)
			for _, ev := range e.trail(t) {
				if ev.Type == want.Type && ev.Detail == want.Detail && ev.SubjectID == a.user.ID {
					failed++
				}
			}
			if failed != domain.LoginFreeFailures {
				t.Errorf("%d login.failed events via factor_code, want %d", failed, domain.LoginFreeFailures)
			}
		})
	}
}

// TestTOTP_right_code_does_not_forget_failures: a right code gives back
// its own check but leaves the email's other failures counted.
func TestTOTP_right_code_does_not_forget_failures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedMFA(t, "ada@example.com")
	for range domain.LoginFreeFailures - 1 {
		wantErr(t, e.svc.MFA.DisableTOTP(ctx, a.self, ptr("000000")), domain.ErrInvalidMFACode)
	}
	_, err := e.svc.MFA.RenewRecoveryCodes(ctx, a.self, ptr(totpCode(t, a.secret, e.clock.Now())))
	wantErr(t, err, nil)
	wantErr(t, e.svc.MFA.DisableTOTP(ctx, a.self, ptr("000000")), domain.ErrInvalidMFACode)
	wantLockedOut(t, e, "ada@example.com")
}

// TestFactor_notices (issue 24, finding 1): the account is mailed a notice
// when a factor is added or removed, naming the kind and never the
// passkey's name.
func TestFactor_notices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, p := e.seed(t, "ada@example.com")
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	e.deliver(t)
	notice := func(step string, template domain.MailTemplate, factor string) {
		t.Helper()
		m := onlyMail(t, e.deliver(t), template)
		// The seeded address is not verified: the notice names nobody.
		if m.To != u.Email || m.Data["factor"] != factor || m.User != u.ID || m.Name != "" {
			t.Errorf("%s: notice %+v, want %s to %s about %s", step, m, template, u.Email, factor)
		}
		for k, v := range m.Data {
			if k != "factor" {
				t.Errorf("%s: the notice carries %s=%q", step, k, v)
			}
		}
	}
	secret, _ := e.enrolTOTP(t, p)
	notice("totp on", domain.MailFactorAdded, domain.FactorTOTP)
	strong := withSession(p, strongSession(e))
	pk := e.registerPasskey(t, strong, softauthn.New(testOrigin))
	notice("passkey added", domain.MailFactorAdded, domain.FactorPasskey)
	wantErr(t, e.svc.MFA.DisableTOTP(ctx, p, ptr(totpCode(t, secret, e.clock.Now()))), nil)
	notice("totp off", domain.MailFactorRemoved, domain.FactorTOTP)
	wantErr(t, e.svc.Passkeys.Delete(ctx, strong, string(pk.ID), nil), nil)
	notice("passkey removed", domain.MailFactorRemoved, domain.FactorPasskey)
	e.registerPasskey(t, p, softauthn.New(testOrigin))
	notice("passkey added again", domain.MailFactorAdded, domain.FactorPasskey)
	wantErr(t, e.svc.MFA.Reset(ctx, admin, u.ID.String()), nil)
	notice("admin reset", domain.MailFactorRemoved, domain.FactorAll)
	// A reset of an account with nothing to remove sends nothing.
	wantErr(t, e.svc.MFA.Reset(ctx, admin, u.ID.String()), nil)
	if sent := e.deliver(t); len(sent) != 0 {
		t.Errorf("a reset that removed nothing sent %d messages", len(sent))
	}
}
