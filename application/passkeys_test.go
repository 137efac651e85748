package application_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// beginRegistration starts a registration for p, proven by the seeded
// password, and has key answer it.
func (e *env) beginRegistration(t *testing.T, p *domain.Principal, key *softauthn.Authenticator, f softauthn.Faults) (string, json.RawMessage) {
	t.Helper()
	return e.beginRegistrationWith(t, p, seededPassword, key, f)
}

// beginRegistrationWith is beginRegistration proven by password.
func (e *env) beginRegistrationWith(t *testing.T, p *domain.Principal, password string, key *softauthn.Authenticator, f softauthn.Faults) (string, json.RawMessage) {
	t.Helper()
	opts, err := e.svc.Passkeys.BeginRegistration(ctx, p, &password)
	if err != nil {
		t.Fatalf("BeginRegistration: %v", err)
	}
	cred, err := key.Create(opts.PublicKey, f)
	if err != nil {
		t.Fatalf("softauthn Create: %v", err)
	}
	return opts.CeremonyID, cred
}

// registerPasskey registers a passkey of key for p, proven by the seeded
// password.
func (e *env) registerPasskey(t *testing.T, p *domain.Principal, key *softauthn.Authenticator) domain.Passkey {
	t.Helper()
	return e.registerPasskeyWith(t, p, seededPassword, key)
}

// registerPasskeyWith is registerPasskey proven by password.
func (e *env) registerPasskeyWith(t *testing.T, p *domain.Principal, password string, key *softauthn.Authenticator) domain.Passkey {
	t.Helper()
	ceremony, cred := e.beginRegistrationWith(t, p, password, key, softauthn.Faults{})
	pk, err := e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{
		CeremonyID: &ceremony, Name: ptr("Laptop"), Credential: cred})
	if err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	return pk
}

// beginLogin starts a passkey login (the second step of mfaToken's, when
// set) and has key answer it.
func (e *env) beginLogin(t *testing.T, key *softauthn.Authenticator, f softauthn.Faults, mfaToken *string) (string, json.RawMessage) {
	t.Helper()
	opts, err := e.svc.Passkeys.BeginLogin(ctx, mfaToken)
	if err != nil {
		t.Fatalf("BeginLogin: %v", err)
	}
	assertion, err := key.Get(opts.PublicKey, f)
	if err != nil {
		t.Fatalf("softauthn Get: %v", err)
	}
	return opts.CeremonyID, assertion
}

// passkeyLogin signs in with key: a discoverable login, or the second step
// of mfaToken's.
func (e *env) passkeyLogin(t *testing.T, key *softauthn.Authenticator, f softauthn.Faults, mfaToken *string) (application.TokenPair, error) {
	t.Helper()
	ceremony, assertion := e.beginLogin(t, key, f, mfaToken)
	return tokensOf(e.svc.Passkeys.FinishLogin(ctx, application.PasskeyLoginInput{CeremonyID: &ceremony, Credential: assertion, MFAToken: mfaToken}))
}

func TestPasskeys_registration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run registers, or tries to, as the env's user.
		run     func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error)
		wantErr error
	}{
		{
			name: "no_second_factor",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				return e.registerPasskey(t, p, softauthn.New(testOrigin)), nil
			},
		},
		{
			name: "second_factor_and_strong_session",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				e.enrolTOTP(t, p)
				return e.registerPasskey(t, withSession(p, strongSession(e)), softauthn.New(testOrigin)), nil
			},
		},
		{
			name: "second_factor_and_recent_session",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				e.enrolTOTP(t, p)
				return e.registerPasskey(t, withSession(p, recentSession(e)), softauthn.New(testOrigin)), nil
			},
		},
		{
			name: "second_factor_and_old_single_factor_session",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				e.enrolTOTP(t, p)
				_, err := e.svc.Passkeys.BeginRegistration(ctx, withSession(p, oldSession(e)), ptr(seededPassword))
				return domain.Passkey{}, err
			},
			wantErr: domain.ErrRecentSignInRequired,
		},
		{
			name: "passkey_account_and_password_session_from_a_login",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				e.registerPasskey(t, p, softauthn.New(testOrigin))
				// The access token of a password login carries no
				// auth_time here: a session of unknown age.
				_, err := e.svc.Passkeys.BeginRegistration(ctx, withSession(p, domain.Session{ID: "s", AMR: domain.AMRPassword}), ptr(seededPassword))
				return domain.Passkey{}, err
			},
			wantErr: domain.ErrRecentSignInRequired,
		},
		{
			name: "ceremony_used_twice",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				ceremony, cred := e.beginRegistration(t, p, softauthn.New(testOrigin), softauthn.Faults{})
				in := application.PasskeyRegistrationInput{CeremonyID: &ceremony, Credential: cred}
				_, err := e.svc.Passkeys.FinishRegistration(ctx, p, in)
				wantErr(t, err, nil)
				return e.svc.Passkeys.FinishRegistration(ctx, p, in)
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "ceremony_of_another_user",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				_, other := e.seed(t, "grace@example.com")
				ceremony, cred := e.beginRegistration(t, other, softauthn.New(testOrigin), softauthn.Faults{})
				return e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &ceremony, Credential: cred})
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "login_ceremony",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				_, cred := e.beginRegistration(t, p, softauthn.New(testOrigin), softauthn.Faults{})
				opts, err := e.svc.Passkeys.BeginLogin(ctx, nil)
				wantErr(t, err, nil)
				return e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &opts.CeremonyID, Credential: cred})
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "expired_ceremony",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				ceremony, cred := e.beginRegistration(t, p, softauthn.New(testOrigin), softauthn.Faults{})
				e.clock.Advance(domain.CeremonyTTL)
				return e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &ceremony, Credential: cred})
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "phishing_origin",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				ceremony, cred := e.beginRegistration(t, p, softauthn.New(testOrigin), softauthn.Faults{Origin: "https://evil.example"})
				return e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &ceremony, Credential: cred})
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "credential_registered_twice",
			run: func(t *testing.T, e *env, p *domain.Principal) (domain.Passkey, error) {
				key := softauthn.New(testOrigin)
				ceremony, cred := e.beginRegistration(t, p, key, softauthn.Faults{})
				_, err := e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &ceremony, Credential: cred})
				wantErr(t, err, nil)
				again, err := e.svc.Passkeys.BeginRegistration(ctx, withSession(p, strongSession(e)), ptr(seededPassword))
				wantErr(t, err, nil)
				return e.svc.Passkeys.FinishRegistration(ctx, p, application.PasskeyRegistrationInput{CeremonyID: &again.CeremonyID, Credential: cred})
			},
			wantErr: domain.ErrInvalidPasskey,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u, p := e.seed(t, "ada@example.com")
			pk, err := tc.run(t, e, p)
			wantErr(t, err, tc.wantErr)
			list, lerr := e.svc.Passkeys.List(ctx, p)
			wantErr(t, lerr, nil)
			if tc.wantErr != nil {
				return
			}
			if pk.UserID != u.ID || pk.Name != "Laptop" || !pk.CreatedAt.Equal(e.clock.Now()) || pk.LastUsedAt != nil ||
				!slices.ContainsFunc(list, func(l domain.Passkey) bool { return l.ID == pk.ID }) {
				t.Errorf("passkey %+v, list %+v", pk, list)
			}
			if got, _ := e.store.Users().ByID(ctx, u.ID); !got.MFAEnabled {
				t.Error("mfaEnabled not set by the passkey")
			}
		})
	}
}

func TestPasskeys_login(t *testing.T) {
	t.Parallel()
	const email = "ada@example.com"
	tests := []struct {
		name string
		// run signs in, or tries to, with key, a passkey of the env's user.
		run     func(t *testing.T, e *env, u domain.User, key *softauthn.Authenticator) (application.TokenPair, error)
		wantErr error
		wantAMR domain.AMR
	}{
		{
			name: "discoverable_user_verified",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{}, nil)
			},
			wantAMR: domain.AMRPasskeyVerified,
		},
		{
			name: "discoverable_without_user_verification",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{NoUserVerification: true}, nil)
			},
			wantAMR: domain.AMRPasskey,
		},
		{
			name: "second_factor_after_the_password",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{}, &e.passwordStep(t, email).MFAToken)
			},
			wantAMR: domain.AMRPasswordPasskey,
		},
		{
			name: "ceremony_used_twice",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				opts, err := e.svc.Passkeys.BeginLogin(ctx, nil)
				wantErr(t, err, nil)
				for i := range 2 {
					assertion, err := key.Get(opts.PublicKey, softauthn.Faults{})
					wantErr(t, err, nil)
					pair, err := tokensOf(e.svc.Passkeys.FinishLogin(ctx, application.PasskeyLoginInput{CeremonyID: &opts.CeremonyID, Credential: assertion}))
					if i == 1 {
						return pair, err
					}
					wantErr(t, err, nil)
				}
				return application.TokenPair{}, nil
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "second_factor_ceremony_of_another_account",
			run: func(t *testing.T, e *env, _ domain.User, _ *softauthn.Authenticator) (application.TokenPair, error) {
				// Grace's password step begins a ceremony for grace's
				// passkeys; Ada's second step may not finish it.
				_, grace := e.seed(t, "grace@example.com")
				graceKey := softauthn.New(testOrigin)
				e.registerPasskey(t, grace, graceKey)
				ceremony, assertion := e.beginLogin(t, graceKey, softauthn.Faults{}, &e.passwordStep(t, "grace@example.com").MFAToken)
				token := e.passwordStep(t, email).MFAToken
				return tokensOf(e.svc.Passkeys.FinishLogin(ctx, application.PasskeyLoginInput{CeremonyID: &ceremony, Credential: assertion, MFAToken: &token}))
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "second_factor_with_another_accounts_passkey",
			run: func(t *testing.T, e *env, _ domain.User, _ *softauthn.Authenticator) (application.TokenPair, error) {
				_, grace := e.seed(t, "grace@example.com")
				graceKey := softauthn.New(testOrigin)
				e.registerPasskey(t, grace, graceKey)
				token := e.passwordStep(t, email).MFAToken
				opts, err := e.svc.Passkeys.BeginLogin(ctx, &token)
				wantErr(t, err, nil)
				// Grace's authenticator answers Ada's options with its own
				// credential, which the options do not allow.
				assertion, err := graceKey.Get(withoutAllowCredentials(t, opts.PublicKey), softauthn.Faults{})
				wantErr(t, err, nil)
				return tokensOf(e.svc.Passkeys.FinishLogin(ctx, application.PasskeyLoginInput{CeremonyID: &opts.CeremonyID, Credential: assertion, MFAToken: &token}))
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "counter_going_backwards",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				for range 3 {
					_, err := e.passkeyLogin(t, key, softauthn.Faults{}, nil)
					wantErr(t, err, nil)
				}
				return e.passkeyLogin(t, key, softauthn.Faults{Counter: ptr(uint32(2))}, nil)
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "counter_standing_still",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				_, err := e.passkeyLogin(t, key, softauthn.Faults{}, nil)
				wantErr(t, err, nil)
				return e.passkeyLogin(t, key, softauthn.Faults{Counter: ptr(uint32(1))}, nil)
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "bad_signature",
			run: func(t *testing.T, e *env, _ domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				return e.passkeyLogin(t, key, softauthn.Faults{BadSignature: true}, nil)
			},
			wantErr: domain.ErrInvalidPasskey,
		},
		{
			name: "disabled_account",
			run: func(t *testing.T, e *env, u domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				disable(t, e, u.ID)
				return e.passkeyLogin(t, key, softauthn.Faults{}, nil)
			},
			wantErr: domain.ErrAccountDisabled,
		},
		{
			name: "removed_passkey",
			run: func(t *testing.T, e *env, u domain.User, key *softauthn.Authenticator) (application.TokenPair, error) {
				list, err := e.store.Passkeys().Passkeys(ctx, u.ID)
				wantErr(t, err, nil)
				owner := &domain.Principal{UserID: u.ID, Profiles: u.Profiles, Session: strongSession(e)}
				wantErr(t, e.svc.Passkeys.Delete(ctx, owner, string(list[0].ID), nil), nil)
				return e.passkeyLogin(t, key, softauthn.Faults{}, nil)
			},
			wantErr: domain.ErrInvalidPasskey,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u, p := e.seed(t, email)
			key := softauthn.New(testOrigin)
			e.registerPasskey(t, p, key)
			e.clock.Advance(time.Minute)
			pair, err := tc.run(t, e, u, key)
			wantErr(t, err, tc.wantErr)
			if tc.wantErr != nil {
				if pair.Access.Token != "" || pair.RefreshToken != "" {
					t.Errorf("tokens issued: %+v", pair)
				}
				return
			}
			if s := e.session(t, pair); !slices.Equal(s.AMR, tc.wantAMR) || s.ID == "" || pair.User.ID != u.ID {
				t.Errorf("session %+v of %s, want amr %v of %s", s, pair.User.ID, tc.wantAMR, u.ID)
			}
			list, err := e.svc.Passkeys.List(ctx, p)
			wantErr(t, err, nil)
			if len(list) != 1 || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(e.clock.Now()) {
				t.Errorf("passkey after the login %+v, want last used now", list)
			}
		})
	}
}

// withoutAllowCredentials drops allowCredentials from request options,
// as a client that ignores them would.
func withoutAllowCredentials(t *testing.T, publicKey json.RawMessage) json.RawMessage {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal(publicKey, &o); err != nil {
		t.Fatal(err)
	}
	delete(o, "allowCredentials")
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPasskeys_Delete(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		id      func(own, others domain.Passkey) string
		wantErr error
	}{
		{name: "own", id: func(own, _ domain.Passkey) string { return string(own.ID) }},
		{name: "another_users", id: func(_, others domain.Passkey) string { return string(others.ID) }, wantErr: domain.ErrPasskeyNotFound},
		{name: "unknown", id: func(domain.Passkey, domain.Passkey) string { return string(domain.NewPasskeyID(time.Now())) }, wantErr: domain.ErrPasskeyNotFound},
		{name: "malformed", id: func(domain.Passkey, domain.Passkey) string { return "../x" }, wantErr: domain.ErrInvalidID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, ada := e.seed(t, "ada@example.com")
			_, grace := e.seed(t, "grace@example.com")
			own := e.registerPasskey(t, ada, softauthn.New(testOrigin))
			others := e.registerPasskey(t, grace, softauthn.New(testOrigin))
			err := e.svc.Passkeys.Delete(ctx, withSession(ada, strongSession(e)), tc.id(own, others), nil)
			wantErr(t, err, tc.wantErr)
			left, lerr := e.svc.Passkeys.List(ctx, grace)
			wantErr(t, lerr, nil)
			if len(left) != 1 {
				t.Errorf("grace has %d passkeys after ada's delete, want 1", len(left))
			}
			wantErr(t, e.svc.Passkeys.Delete(ctx, nil, string(own.ID), nil), domain.ErrUnauthenticated)
		})
	}
}
