package application_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	pqtotp "github.com/pquerna/otp/totp"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// totpCode is the code an authenticator app shows at `at` for the base32
// secret of an enrolment.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := pqtotp.GenerateCodeCustom(secret, at, pqtotp.ValidateOpts{
		Period: uint(domain.TOTPPeriod / time.Second), Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatalf("totp code: %v", err)
	}
	return code
}

// mfaAccount is a seeded account with a confirmed TOTP factor.
type mfaAccount struct {
	user     domain.User
	self     *domain.Principal
	secret   string
	recovery []string
}

// code is the account's TOTP code at the env's clock.
func (a mfaAccount) code(t *testing.T, e *env) string { return totpCode(t, a.secret, e.clock.Now()) }

// enrolTOTP confirms a TOTP factor for p. The clock then moves on two
// steps, so that codes of the current step and the one before are fresh.
func (e *env) enrolTOTP(t *testing.T, p *domain.Principal) (secret string, recovery []string) {
	t.Helper()
	enrol, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
	if err != nil {
		t.Fatalf("BeginTOTP: %v", err)
	}
	recovery, err = e.svc.MFA.ConfirmTOTP(ctx, p, ptr(totpCode(t, enrol.Secret, e.clock.Now())))
	if err != nil {
		t.Fatalf("ConfirmTOTP: %v", err)
	}
	e.clock.Advance(2 * domain.TOTPPeriod)
	return enrol.Secret, recovery
}

// seedMFA seeds an account with a confirmed TOTP factor.
func (e *env) seedMFA(t *testing.T, email string, profiles ...domain.Profile) mfaAccount {
	t.Helper()
	u, p := e.seed(t, email, profiles...)
	secret, recovery := e.enrolTOTP(t, p)
	return mfaAccount{user: u, self: p, secret: secret, recovery: recovery}
}

// passwordStep logs in with the seeded password and returns the second
// step it asks for.
func (e *env) passwordStep(t *testing.T, email string) *application.SecondStepChallenge {
	t.Helper()
	res, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: seededPassword})
	if err != nil || res.SecondStep == nil {
		t.Fatalf("login %s: %+v, error = %v, want a second factor required", email, res, err)
	}
	return res.SecondStep
}

// loginCode is the second step with a TOTP code.
func (e *env) loginCode(token, code string) (application.TokenPair, error) {
	return tokensOf(e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &token, Code: &code}))
}

// loginRecovery is the second step with a recovery code.
func (e *env) loginRecovery(token, code string) (application.TokenPair, error) {
	return tokensOf(e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &token, RecoveryCode: &code}))
}

// session is the session of a pair's access token.
func (e *env) session(t *testing.T, pair application.TokenPair) domain.Session {
	t.Helper()
	p, err := e.auth.Authenticate(ctx, pair.Access.Token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return p.Session
}

// wantLocked fails unless err is the lock-out.
func wantLocked(t *testing.T, err error) {
	t.Helper()
	var tooMany *domain.TooManyAttemptsError
	if !errors.As(err, &tooMany) {
		t.Fatalf("error = %v, want a lock-out", err)
	}
}

// strongSession, recentSession and oldSession are sessions of a
// principal: signed in with a second factor, with a password alone 5
// minutes ago, and with a password alone long ago.
func strongSession(e *env) domain.Session {
	return domain.Session{ID: "s", AuthTime: e.clock.Now().Add(-24 * time.Hour), AMR: domain.AMRPasswordOTP}
}

func recentSession(e *env) domain.Session {
	return domain.Session{ID: "s", AuthTime: e.clock.Now().Add(-5 * time.Minute), AMR: domain.AMRPassword}
}

func oldSession(e *env) domain.Session {
	return domain.Session{ID: "s", AuthTime: e.clock.Now().Add(-domain.RecentSignIn - time.Second), AMR: domain.AMRPassword}
}

// withSession is p signed in by s.
func withSession(p *domain.Principal, s domain.Session) *domain.Principal {
	c := *p
	c.Session = s
	return &c
}

func TestLogin_asks_for_the_second_factors_the_account_has(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		setup       func(t *testing.T, e *env, p *domain.Principal)
		wantMethods []string // nil: no second step
	}{
		{name: "no_factor", setup: func(*testing.T, *env, *domain.Principal) {}},
		{
			name:        "totp",
			setup:       func(t *testing.T, e *env, p *domain.Principal) { e.enrolTOTP(t, p) },
			wantMethods: []string{domain.MFAMethodTOTP, domain.MFAMethodRecoveryCode},
		},
		{
			name: "passkey",
			setup: func(t *testing.T, e *env, p *domain.Principal) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
			},
			wantMethods: []string{domain.MFAMethodPasskey},
		},
		{
			name: "totp_and_passkey",
			setup: func(t *testing.T, e *env, p *domain.Principal) {
				e.enrolTOTP(t, p)
				e.registerPasskey(t, withSession(p, strongSession(e)), softauthn.New(testOrigin))
			},
			wantMethods: []string{domain.MFAMethodTOTP, domain.MFAMethodRecoveryCode, domain.MFAMethodPasskey},
		},
		{
			name: "totp_pending",
			setup: func(t *testing.T, e *env, p *domain.Principal) {
				_, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
				wantErr(t, err, nil)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, p := e.seed(t, "ada@example.com")
			tc.setup(t, e, p)
			res, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
			wantErr(t, err, nil)
			if tc.wantMethods == nil {
				if res.Tokens == nil {
					t.Fatalf("second step %+v, want a session", res.SecondStep)
				}
				if got := e.session(t, *res.Tokens).AMR; !slices.Equal(got, domain.AMRPassword) {
					t.Errorf("amr = %v, want %v", got, domain.AMRPassword)
				}
				return
			}
			required := res.SecondStep
			if required == nil {
				t.Fatal("a session opened, want a second factor required")
			}
			if res.Tokens != nil {
				t.Errorf("tokens issued before the second factor: %+v", res.Tokens)
			}
			if !slices.Equal(required.Methods, tc.wantMethods) || !domain.WellFormedMFAToken(required.MFAToken) || len(required.MFAToken) != 43 {
				t.Errorf("second step %+v, want methods %v and a 43-character token", required, tc.wantMethods)
			}
			// A wrong password still says nothing of the second factor.
			_, err = e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "not it"})
			wantErr(t, err, domain.ErrInvalidCredentials)
		})
	}
}

func TestLoginMFA(t *testing.T) {
	t.Parallel()
	const email = "ada@example.com"
	tests := []struct {
		name string
		// run ends with the step whose answer is checked.
		run        func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error)
		wantErr    error
		wantLocked bool
	}{
		{
			name: "right_code",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, a.code(t, e))
			},
		},
		{
			name: "code_of_the_step_before",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, totpCode(t, a.secret, e.clock.Now().Add(-domain.TOTPPeriod)))
			},
		},
		{
			name: "code_of_the_step_after",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, totpCode(t, a.secret, e.clock.Now().Add(domain.TOTPPeriod)))
			},
		},
		{
			name: "code_two_steps_away",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, totpCode(t, a.secret, e.clock.Now().Add(2*domain.TOTPPeriod)))
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "replayed_code",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				code := a.code(t, e)
				_, err := e.loginCode(e.passwordStep(t, email).MFAToken, code)
				wantErr(t, err, nil)
				e.clock.Advance(10 * time.Second) // still within the window
				return e.loginCode(e.passwordStep(t, email).MFAToken, code)
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "code_of_an_earlier_step_after_a_later_one",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				_, err := e.loginCode(e.passwordStep(t, email).MFAToken, totpCode(t, a.secret, e.clock.Now().Add(domain.TOTPPeriod)))
				wantErr(t, err, nil)
				return e.loginCode(e.passwordStep(t, email).MFAToken, a.code(t, e))
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "wrong_code",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, wrongCode(t, e, a))
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "malformed_code",
			run: func(t *testing.T, e *env, _ mfaAccount) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, "12345a")
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "recovery_code",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, a.recovery[3])
			},
		},
		{
			name: "recovery_code_in_upper_case",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, strings.ToUpper(a.recovery[3]))
			},
		},
		{
			name: "recovery_code_used_twice",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				_, err := e.loginRecovery(e.passwordStep(t, email).MFAToken, a.recovery[3])
				wantErr(t, err, nil)
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, strings.ToUpper(a.recovery[3]))
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "recovery_code_of_another_account",
			run: func(t *testing.T, e *env, _ mfaAccount) (application.TokenPair, error) {
				other := e.seedMFA(t, "grace@example.com")
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, other.recovery[0])
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "malformed_recovery_code",
			run: func(t *testing.T, e *env, _ mfaAccount) (application.TokenPair, error) {
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, "abcde abcde")
			},
			wantErr: domain.ErrMFACodeRejected,
		},
		{
			name: "token_used_twice",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token := e.passwordStep(t, email).MFAToken
				_, err := e.loginCode(token, a.code(t, e))
				wantErr(t, err, nil)
				return e.loginRecovery(token, a.recovery[0])
			},
			wantErr: domain.ErrInvalidMFAToken,
		},
		{
			name: "token_expired",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token := e.passwordStep(t, email).MFAToken
				e.clock.Advance(domain.MFAChallengeTTL)
				return e.loginCode(token, a.code(t, e))
			},
			wantErr: domain.ErrInvalidMFAToken,
		},
		{
			name: "unknown_token",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token, _ := domain.NewMFAToken()
				return e.loginCode(token, a.code(t, e))
			},
			wantErr: domain.ErrInvalidMFAToken,
		},
		{
			name: "malformed_token",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				return e.loginCode("not-a-token", a.code(t, e))
			},
			wantErr: domain.ErrInvalidMFAToken,
		},
		{
			name: "fifth_wrong_code_voids_the_token",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token := e.passwordStep(t, email).MFAToken
				for i := range domain.MFAChallengeMaxFailures {
					if _, err := e.loginCode(token, wrongCode(t, e, a)); !errors.Is(err, domain.ErrMFACodeRejected) {
						t.Fatalf("wrong code %d: error = %v", i+1, err)
					}
				}
				return e.loginCode(token, a.code(t, e))
			},
			wantErr: domain.ErrInvalidMFAToken,
		},
		{
			name: "code_and_recovery_code_at_once",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token, code := e.passwordStep(t, email).MFAToken, a.code(t, e)
				return tokensOf(e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &token, Code: &code, RecoveryCode: &a.recovery[0]}))
			},
			wantErr: &domain.ValidationError{},
		},
		{
			name: "no_code",
			run: func(t *testing.T, e *env, _ mfaAccount) (application.TokenPair, error) {
				token := e.passwordStep(t, email).MFAToken
				return tokensOf(e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &token, Code: ptr("")}))
			},
			wantErr: &domain.ValidationError{},
		},
		{
			// The comment of requireSecondStep: a right password does
			// not forget the failures of an account with a second factor.
			name: "wrong_codes_count_against_the_lock_out",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				for range 3 {
					_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: "not it"})
					wantErr(t, err, domain.ErrInvalidCredentials)
				}
				token := e.passwordStep(t, email).MFAToken
				for range 2 {
					_, err := e.loginCode(token, wrongCode(t, e, a))
					wantErr(t, err, domain.ErrMFACodeRejected)
				}
				return e.loginCode(token, a.code(t, e))
			},
			wantLocked: true,
		},
		{
			name: "wrong_codes_lock_the_password_out_too",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				for range 3 {
					_, _ = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "not it"})
				}
				token := e.passwordStep(t, email).MFAToken
				for range 2 {
					_, _ = e.loginCode(token, wrongCode(t, e, a))
				}
				return tokensOf(e.auth.Login(ctx, application.LoginInput{Email: email, Password: seededPassword}))
			},
			wantLocked: true,
		},
		{
			name: "finished_login_clears_the_count",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				for range 3 {
					_, _ = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "not it"})
				}
				token := e.passwordStep(t, email).MFAToken
				_, err := e.loginCode(token, wrongCode(t, e, a))
				wantErr(t, err, domain.ErrMFACodeRejected)
				_, err = e.loginCode(token, a.code(t, e))
				wantErr(t, err, nil)
				// Four failures more would lock the account had the count
				// been kept.
				for i := range domain.LoginFreeFailures - 1 {
					if _, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: "not it"}); !errors.Is(err, domain.ErrInvalidCredentials) {
						t.Fatalf("wrong password %d after the login: error = %v", i+1, err)
					}
				}
				e.clock.Advance(domain.TOTPPeriod)
				return e.loginCode(e.passwordStep(t, email).MFAToken, a.code(t, e))
			},
		},
		{
			name: "disabled_account",
			run: func(t *testing.T, e *env, a mfaAccount) (application.TokenPair, error) {
				token := e.passwordStep(t, email).MFAToken
				disable(t, e, a.user.ID)
				return e.loginCode(token, a.code(t, e))
			},
			wantErr: domain.ErrAccountDisabled,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.seedMFA(t, email)
			pair, err := tc.run(t, e, a)
			switch {
			case tc.wantLocked:
				wantLocked(t, err)
				return
			case tc.wantErr != nil:
				if verr := (&domain.ValidationError{}); errors.As(tc.wantErr, &verr) {
					if !errors.As(err, &verr) {
						t.Fatalf("error = %v, want a validation error", err)
					}
				} else {
					wantErr(t, err, tc.wantErr)
				}
				if pair.Access.Token != "" || pair.RefreshToken != "" {
					t.Errorf("tokens issued: %+v", pair)
				}
				return
			}
			wantErr(t, err, nil)
			s := e.session(t, pair)
			if !slices.Equal(s.AMR, domain.AMRPasswordOTP) || s.AMR.ACR() != domain.ACRMultiFactor || s.ID == "" {
				t.Errorf("session %+v, want amr %v (aal2) and an id", s, domain.AMRPasswordOTP)
			}
			if pair.User.ID != a.user.ID || pair.RefreshToken == "" {
				t.Errorf("pair %+v", pair)
			}
		})
	}
}

// wrongCode is a well-formed TOTP code that no step of the window gives.
func wrongCode(t *testing.T, e *env, a mfaAccount) string {
	t.Helper()
	var window []string
	for d := -2; d <= 2; d++ {
		window = append(window, totpCode(t, a.secret, e.clock.Now().Add(time.Duration(d)*domain.TOTPPeriod)))
	}
	for _, c := range []string{"000000", "111111", "222222", "333333", "444444", "555555"} {
		if !slices.Contains(window, c) {
			return c
		}
	}
	t.Fatal("no wrong code found")
	return ""
}

// disable disables an account directly in the store.
func disable(t *testing.T, e *env, id domain.UserID) {
	t.Helper()
	_, err := e.store.Users().Update(ctx, id, func(u *domain.User) error {
		u.Disabled = true
		return nil
	})
	wantErr(t, err, nil)
}

func TestLoginMFA_concurrent_right_code_succeeds_once(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.seedMFA(t, "ada@example.com")
	token, code := e.passwordStep(t, "ada@example.com").MFAToken, a.code(t, e)
	const n = 8
	var (
		wg   sync.WaitGroup
		errs = make([]error, n)
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = e.loginCode(token, code)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var tooMany *domain.TooManyAttemptsError
		switch {
		case err == nil:
			ok++
		case errors.Is(err, domain.ErrMFACodeRejected), errors.Is(err, domain.ErrInvalidMFAToken), errors.As(err, &tooMany):
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d logins succeeded, want exactly 1 (errors %v)", ok, errs)
	}
}

func TestMFA_BeginTOTP_and_ConfirmTOTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		run     func(t *testing.T, e *env, p *domain.Principal) error
		wantErr error
	}{
		{
			name: "no_current_password",
			run: func(_ *testing.T, e *env, p *domain.Principal) error {
				_, err := e.svc.MFA.BeginTOTP(ctx, p, nil)
				return err
			},
			wantErr: &domain.ValidationError{},
		},
		{
			name: "wrong_current_password",
			run: func(_ *testing.T, e *env, p *domain.Principal) error {
				_, err := e.svc.MFA.BeginTOTP(ctx, p, ptr("not it"))
				return err
			},
			wantErr: domain.ErrInvalidCredentials,
		},
		{
			name: "anonymous",
			run: func(_ *testing.T, e *env, _ *domain.Principal) error {
				_, err := e.svc.MFA.BeginTOTP(ctx, nil, ptr(seededPassword))
				return err
			},
			wantErr: domain.ErrUnauthenticated,
		},
		{
			name: "wrong_first_code",
			run: func(t *testing.T, e *env, p *domain.Principal) error {
				enrol, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
				wantErr(t, err, nil)
				wrong := wrongCode(t, e, mfaAccount{secret: enrol.Secret})
				_, err = e.svc.MFA.ConfirmTOTP(ctx, p, &wrong)
				return err
			},
			wantErr: domain.ErrInvalidMFACode,
		},
		{
			name: "confirm_without_enrolment",
			run: func(_ *testing.T, e *env, p *domain.Principal) error {
				_, err := e.svc.MFA.ConfirmTOTP(ctx, p, ptr("123456"))
				return err
			},
			wantErr: domain.ErrMFANotEnabled,
		},
		{
			name: "begin_when_enabled",
			run: func(t *testing.T, e *env, p *domain.Principal) error {
				e.enrolTOTP(t, p)
				_, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
				return err
			},
			wantErr: domain.ErrMFAAlreadyEnabled,
		},
		{
			name: "confirm_twice",
			run: func(t *testing.T, e *env, p *domain.Principal) error {
				secret, _ := e.enrolTOTP(t, p)
				_, err := e.svc.MFA.ConfirmTOTP(ctx, p, ptr(totpCode(t, secret, e.clock.Now())))
				return err
			},
			wantErr: domain.ErrMFAAlreadyEnabled,
		},
		{
			name: "second_begin_replaces_the_pending_factor",
			run: func(t *testing.T, e *env, p *domain.Principal) error {
				first, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
				wantErr(t, err, nil)
				second, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
				wantErr(t, err, nil)
				if first.Secret == second.Secret || !strings.HasPrefix(second.URI, "otpauth://totp/") {
					t.Errorf("enrolments %+v then %+v", first, second)
				}
				_, err = e.svc.MFA.ConfirmTOTP(ctx, p, ptr(totpCode(t, second.Secret, e.clock.Now())))
				return err
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, p := e.seed(t, "ada@example.com")
			err := tc.run(t, e, p)
			if verr := (&domain.ValidationError{}); errors.As(tc.wantErr, &verr) {
				if !errors.As(err, &verr) {
					t.Fatalf("error = %v, want a validation error", err)
				}
				return
			}
			wantErr(t, err, tc.wantErr)
		})
	}
}

func TestMFA_RenewRecoveryCodes(t *testing.T) {
	t.Parallel()
	// renewed gives a passkey-only account its first codes, with a strong
	// session.
	renewed := func(t *testing.T, e *env, p *domain.Principal) []string {
		t.Helper()
		codes, err := e.svc.MFA.RenewRecoveryCodes(ctx, withSession(p, strongSession(e)), nil)
		wantErr(t, err, nil)
		return codes
	}
	tests := []struct {
		name string
		// setup gives the account its factors and returns the caller, the
		// code it sends and the recovery codes it has.
		setup     func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string)
		wantErr   error
		wantValid bool // want a validation error
	}{
		{
			name: "totp_code",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				secret, recovery := e.enrolTOTP(t, p)
				return p, ptr(totpCode(t, secret, e.clock.Now())), recovery
			},
		},
		{
			name: "recovery_code_in_upper_case",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				_, recovery := e.enrolTOTP(t, p)
				return p, ptr(strings.ToUpper(recovery[9])), recovery
			},
		},
		{
			name: "totp_wrong_code",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				secret, recovery := e.enrolTOTP(t, p)
				return p, ptr(wrongCode(t, e, mfaAccount{secret: secret})), recovery
			},
			wantErr: domain.ErrInvalidMFACode,
		},
		{
			name: "totp_no_code_even_with_a_strong_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				_, recovery := e.enrolTOTP(t, p)
				return withSession(p, strongSession(e)), nil, recovery
			},
			wantValid: true,
		},
		{
			name: "passkey_only_strong_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, domain.Session{ID: "s", AMR: domain.AMRPasskeyVerified}), nil, nil
			},
		},
		{
			name: "passkey_only_recent_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, recentSession(e)), nil, nil
			},
		},
		{
			name: "passkey_only_old_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, oldSession(e)), nil, nil
			},
			wantErr: domain.ErrRecentSignInRequired,
		},
		{
			name: "passkey_only_unverified_passkey_session_long_ago",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, domain.Session{ID: "s", AuthTime: e.clock.Now().Add(-time.Hour), AMR: domain.AMRPasskey}), nil, nil
			},
			wantErr: domain.ErrRecentSignInRequired,
		},
		{
			// The second renewal of a passkey-only account: it has codes
			// now, and still needs none to renew them (docs/mfa.md).
			name: "passkey_only_with_codes_left_strong_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, strongSession(e)), nil, renewed(t, e, p)
			},
		},
		{
			name: "passkey_only_with_codes_left_old_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, oldSession(e)), nil, renewed(t, e, p)
			},
			wantErr: domain.ErrRecentSignInRequired,
		},
		{
			name: "passkey_only_recovery_code_and_old_session",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				codes := renewed(t, e, p)
				return withSession(p, oldSession(e)), &codes[0], codes
			},
		},
		{
			name: "passkey_only_a_code_nothing_can_check",
			setup: func(t *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				return withSession(p, strongSession(e)), ptr("123456"), nil
			},
			wantErr: domain.ErrInvalidMFACode,
		},
		{
			name: "no_factor",
			setup: func(_ *testing.T, e *env, p *domain.Principal) (*domain.Principal, *string, []string) {
				return withSession(p, strongSession(e)), nil, nil
			},
			wantErr: domain.ErrMFANotEnabled,
		},
		{
			name: "anonymous",
			setup: func(_ *testing.T, _ *env, _ *domain.Principal) (*domain.Principal, *string, []string) {
				return nil, ptr("123456"), nil
			},
			wantErr: domain.ErrUnauthenticated,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u, p := e.seed(t, "ada@example.com")
			actor, code, old := tc.setup(t, e, p)
			codes, err := e.svc.MFA.RenewRecoveryCodes(ctx, actor, code)
			switch {
			case tc.wantValid:
				var verr *domain.ValidationError
				if !errors.As(err, &verr) {
					t.Fatalf("error = %v, want a validation error", err)
				}
			default:
				wantErr(t, err, tc.wantErr)
			}
			store := e.store.MFA(testBox)
			spend := func(c string) bool {
				used, err := store.UseRecoveryCode(ctx, u.ID, domain.HashRecoveryCode(u.ID, c), e.clock.Now())
				wantErr(t, err, nil)
				return used
			}
			if err != nil {
				// A refused renewal leaves the codes as they were.
				if len(old) > 0 && !spend(old[1]) {
					t.Error("an old recovery code was voided by a refused renewal")
				}
				return
			}
			if len(codes) != domain.RecoveryCodeCount {
				t.Fatalf("%d codes, want %d", len(codes), domain.RecoveryCodeCount)
			}
			for _, c := range codes {
				if parsed, ok := domain.ParseRecoveryCode(c); !ok || parsed != c {
					t.Errorf("code %q is not a recovery code in lower case", c)
				}
			}
			summary, err := e.svc.MFA.Summary(ctx, p)
			wantErr(t, err, nil)
			if summary.RecoveryCodesLeft != domain.RecoveryCodeCount {
				t.Errorf("summary %+v, want %d codes left", summary, domain.RecoveryCodeCount)
			}
			for _, c := range old {
				if spend(c) {
					t.Errorf("old recovery code %q still valid after the renewal", c)
				}
			}
			if !spend(strings.ToUpper(codes[4])) {
				t.Error("a new recovery code is not valid")
			}
		})
	}
}

func TestMFA_DisableTOTP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup gives the account its factors and returns the code sent.
		setup       func(t *testing.T, e *env, a mfaAccount) *string
		wantErr     error
		wantEnabled bool // MFAEnabled afterwards
		wantCodes   int  // recovery codes left afterwards
	}{
		{
			name:  "totp_only_code",
			setup: func(t *testing.T, e *env, a mfaAccount) *string { return ptr(a.code(t, e)) },
		},
		{
			name:  "totp_only_recovery_code",
			setup: func(_ *testing.T, _ *env, a mfaAccount) *string { return ptr(strings.ToUpper(a.recovery[0])) },
		},
		{
			name: "totp_and_passkey_keeps_the_codes",
			setup: func(t *testing.T, e *env, a mfaAccount) *string {
				e.registerPasskey(t, withSession(a.self, strongSession(e)), softauthn.New(testOrigin))
				return ptr(a.code(t, e))
			},
			wantEnabled: true, wantCodes: domain.RecoveryCodeCount,
		},
		{
			name:    "wrong_code",
			setup:   func(t *testing.T, e *env, a mfaAccount) *string { return ptr(wrongCode(t, e, a)) },
			wantErr: domain.ErrInvalidMFACode, wantEnabled: true, wantCodes: domain.RecoveryCodeCount,
		},
		{
			name: "replayed_code",
			setup: func(t *testing.T, e *env, a mfaAccount) *string {
				code := a.code(t, e)
				_, err := e.loginCode(e.passwordStep(t, "ada@example.com").MFAToken, code)
				wantErr(t, err, nil)
				return &code
			},
			wantErr: domain.ErrInvalidMFACode, wantEnabled: true, wantCodes: domain.RecoveryCodeCount,
		},
		{
			name:    "no_code",
			setup:   func(*testing.T, *env, mfaAccount) *string { return nil },
			wantErr: &domain.ValidationError{}, wantEnabled: true, wantCodes: domain.RecoveryCodeCount,
		},
		{
			name: "disabled_already",
			setup: func(t *testing.T, e *env, a mfaAccount) *string {
				wantErr(t, e.svc.MFA.DisableTOTP(ctx, a.self, ptr(a.code(t, e))), nil)
				e.clock.Advance(domain.TOTPPeriod)
				return ptr(a.code(t, e))
			},
			wantErr: domain.ErrMFANotEnabled,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.seedMFA(t, "ada@example.com")
			err := e.svc.MFA.DisableTOTP(ctx, a.self, tc.setup(t, e, a))
			if verr := (&domain.ValidationError{}); errors.As(tc.wantErr, &verr) {
				if !errors.As(err, &verr) {
					t.Fatalf("error = %v, want a validation error", err)
				}
			} else {
				wantErr(t, err, tc.wantErr)
			}
			summary, err := e.svc.MFA.Summary(ctx, a.self)
			wantErr(t, err, nil)
			u, err := e.store.Users().ByID(ctx, a.user.ID)
			wantErr(t, err, nil)
			if summary.TOTP != (tc.wantErr != nil && tc.wantErr != domain.ErrMFANotEnabled) ||
				u.MFAEnabled != tc.wantEnabled || summary.RecoveryCodesLeft != tc.wantCodes {
				t.Errorf("summary %+v, mfaEnabled %v; want enabled %v with %d codes", summary, u.MFAEnabled, tc.wantEnabled, tc.wantCodes)
			}
		})
	}
}

func TestMFA_Reset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		actor   func(e *env, admin, customer *domain.Principal) *domain.Principal
		id      func(target domain.UserID) string
		wantErr error
	}{
		{
			name:    "unauthenticated",
			actor:   func(*env, *domain.Principal, *domain.Principal) *domain.Principal { return nil },
			id:      func(domain.UserID) string { return "nope" },
			wantErr: domain.ErrUnauthenticated,
		},
		{
			name:    "invalid_id_before_forbidden",
			actor:   func(_ *env, _, customer *domain.Principal) *domain.Principal { return customer },
			id:      func(domain.UserID) string { return "nope" },
			wantErr: domain.ErrInvalidID,
		},
		{
			name:    "forbidden_before_not_found",
			actor:   func(_ *env, _, customer *domain.Principal) *domain.Principal { return customer },
			id:      func(domain.UserID) string { return strings.Repeat("0", 24) },
			wantErr: domain.ErrForbidden,
		},
		{
			name:    "own_factors_as_a_customer",
			actor:   func(_ *env, _, customer *domain.Principal) *domain.Principal { return customer },
			id:      func(target domain.UserID) string { return target.String() },
			wantErr: domain.ErrForbidden,
		},
		{
			name:    "not_found",
			actor:   func(_ *env, admin, _ *domain.Principal) *domain.Principal { return admin },
			id:      func(domain.UserID) string { return strings.Repeat("0", 24) },
			wantErr: domain.ErrUserNotFound,
		},
		{
			name: "stale_admin_token",
			actor: func(e *env, admin, _ *domain.Principal) *domain.Principal {
				return &domain.Principal{UserID: domain.NewUserID(e.clock.Now()), Profiles: admin.Profiles}
			},
			id:      func(target domain.UserID) string { return target.String() },
			wantErr: domain.ErrInvalidToken,
		},
		{
			name:  "admin",
			actor: func(_ *env, admin, _ *domain.Principal) *domain.Principal { return admin },
			id:    func(target domain.UserID) string { return target.String() },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
			a := e.seedMFA(t, "ada@example.com")
			e.registerPasskey(t, withSession(a.self, strongSession(e)), softauthn.New(testOrigin))
			pair, err := e.loginCode(e.passwordStep(t, "ada@example.com").MFAToken, a.code(t, e))
			wantErr(t, err, nil)

			err = e.svc.MFA.Reset(ctx, tc.actor(e, admin, a.self), tc.id(a.user.ID))
			wantErr(t, err, tc.wantErr)
			summary, serr := e.svc.MFA.Summary(ctx, a.self)
			wantErr(t, serr, nil)
			u, uerr := e.store.Users().ByID(ctx, a.user.ID)
			wantErr(t, uerr, nil)
			_, rerr := e.auth.Refresh(ctx, pair.RefreshToken)
			if tc.wantErr != nil {
				if !summary.Enabled() || !u.MFAEnabled || rerr != nil {
					t.Errorf("refused reset changed the account: summary %+v, mfaEnabled %v, refresh error %v", summary, u.MFAEnabled, rerr)
				}
				return
			}
			if summary != (domain.MFASummary{}) || u.MFAEnabled {
				t.Errorf("after the reset: summary %+v, mfaEnabled %v", summary, u.MFAEnabled)
			}
			wantErr(t, rerr, domain.ErrRefreshTokenInvalid)
			// The password alone signs in again.
			if s := e.session(t, login(t, e, "ada@example.com", seededPassword)); !slices.Equal(s.AMR, domain.AMRPassword) {
				t.Errorf("amr after the reset %v", s.AMR)
			}
		})
	}
}

func TestRefresh_keeps_the_session_amr_and_id(t *testing.T) {
	t.Parallel()
	const email = "ada@example.com"
	tests := []struct {
		name    string
		signIn  func(t *testing.T, e *env, a mfaAccount, key *softauthn.Authenticator) (application.TokenPair, error)
		wantAMR domain.AMR
	}{
		{
			name: "totp",
			signIn: func(t *testing.T, e *env, a mfaAccount, _ *softauthn.Authenticator) (application.TokenPair, error) {
				return e.loginCode(e.passwordStep(t, email).MFAToken, a.code(t, e))
			},
			wantAMR: domain.AMRPasswordOTP,
		},
		{
			name: "recovery_code",
			signIn: func(t *testing.T, e *env, a mfaAccount, _ *softauthn.Authenticator) (application.TokenPair, error) {
				return e.loginRecovery(e.passwordStep(t, email).MFAToken, a.recovery[0])
			},
			wantAMR: domain.AMRPasswordOTP,
		},
		{
			name: "password_and_passkey",
			signIn: func(t *testing.T, e *env, _ mfaAccount, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{}, &e.passwordStep(t, email).MFAToken)
			},
			wantAMR: domain.AMRPasswordPasskey,
		},
		{
			name: "passkey_verified",
			signIn: func(t *testing.T, e *env, _ mfaAccount, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{}, nil)
			},
			wantAMR: domain.AMRPasskeyVerified,
		},
		{
			name: "passkey_unverified",
			signIn: func(t *testing.T, e *env, _ mfaAccount, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{NoUserVerification: true}, nil)
			},
			wantAMR: domain.AMRPasskey,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.seedMFA(t, email)
			key := softauthn.New(testOrigin)
			e.registerPasskey(t, withSession(a.self, strongSession(e)), key)
			pair, err := tc.signIn(t, e, a, key)
			wantErr(t, err, nil)
			first := e.session(t, pair)
			if !slices.Equal(first.AMR, tc.wantAMR) || first.ID == "" {
				t.Fatalf("session %+v, want amr %v", first, tc.wantAMR)
			}
			for range 2 {
				e.clock.Advance(time.Hour)
				pair, err = e.auth.Refresh(ctx, pair.RefreshToken)
				wantErr(t, err, nil)
				if got := e.session(t, pair); !slices.Equal(got.AMR, tc.wantAMR) || got.ID != first.ID {
					t.Errorf("after refresh %+v, want %+v", got, first)
				}
			}
		})
	}
}

func TestMFAEnabled_follows_the_factors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, p := e.seed(t, "ada@example.com")
	strong := withSession(p, strongSession(e))
	check := func(step string, want bool) {
		t.Helper()
		got, err := e.store.Users().ByID(ctx, u.ID)
		wantErr(t, err, nil)
		summary, err := e.svc.MFA.Summary(ctx, p)
		wantErr(t, err, nil)
		if got.MFAEnabled != want || summary.Enabled() != want {
			t.Errorf("%s: mfaEnabled %v, summary %+v; want %v", step, got.MFAEnabled, summary, want)
		}
	}
	check("at first", false)
	enrol, err := e.svc.MFA.BeginTOTP(ctx, p, ptr(seededPassword))
	wantErr(t, err, nil)
	check("pending totp", false)
	_, err = e.svc.MFA.ConfirmTOTP(ctx, p, ptr(totpCode(t, enrol.Secret, e.clock.Now())))
	wantErr(t, err, nil)
	check("confirmed totp", true)
	first := e.registerPasskey(t, strong, softauthn.New(testOrigin))
	second := e.registerPasskey(t, strong, softauthn.New(testOrigin))
	check("totp and two passkeys", true)
	e.clock.Advance(domain.TOTPPeriod)
	wantErr(t, e.svc.MFA.DisableTOTP(ctx, p, ptr(totpCode(t, enrol.Secret, e.clock.Now()))), nil)
	check("two passkeys", true)
	wantErr(t, e.svc.Passkeys.Delete(ctx, strong, string(first.ID), nil), nil)
	check("one passkey", true)
	wantErr(t, e.svc.Passkeys.Delete(ctx, strong, string(second.ID), nil), nil)
	check("no factor", false)
	if s, _ := e.svc.MFA.Summary(ctx, p); s.RecoveryCodesLeft != 0 {
		t.Errorf("%d recovery codes left without a factor", s.RecoveryCodesLeft)
	}
	login(t, e, "ada@example.com", seededPassword)
}
