package application_test

import (
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// lockOut fails logins for email with a wrong password until the email is
// locked, and returns the wait the lock-out answers.
func (e *env) lockOut(t *testing.T, email string) time.Duration {
	t.Helper()
	for range domain.LoginFreeFailures + 1 {
		_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: "a wrong guess"})
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			return tooMany.RetryAfter
		}
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	t.Fatalf("%s is not locked after %d wrong passwords", email, domain.LoginFreeFailures)
	return 0
}

// failures is how many failed checks the lock-out counts against email.
func (e *env) failures(t *testing.T, email string) int {
	t.Helper()
	rec, err := e.store.LoginAttempts().Get(ctx, domain.Email(email))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Failures
}

func TestAuth_Unlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// actor and target pick the caller and the path id among the
		// env's accounts: ada (a customer, locked out, the usual target),
		// grace (disabled and locked out), root (an admin), carl (never
		// failed a login).
		actor   func(ada, root *domain.Principal) *domain.Principal
		target  func(ada, grace, root, carl domain.User) domain.User
		rawID   string // instead of target's id
		wantErr error
	}{
		{name: "admin", actor: asAdmin, target: unlockAda},
		{name: "admin_to_itself", actor: asAdmin, target: func(_, _, root, _ domain.User) domain.User { return root }},
		// The lock-out and the disabling are separate: enabling the
		// account later must not find it locked.
		{name: "disabled_user", actor: asAdmin, target: func(_, grace, _, _ domain.User) domain.User { return grace }},
		// Nothing to lift: the same answer, and still audited.
		{name: "not_locked", actor: asAdmin, target: func(_, _, _, carl domain.User) domain.User { return carl }},
		{name: "anonymous", actor: func(*domain.Principal, *domain.Principal) *domain.Principal { return nil },
			target: unlockAda, wantErr: domain.ErrUnauthenticated},
		{name: "customer", actor: func(ada, _ *domain.Principal) *domain.Principal { return ada },
			target: unlockAda, wantErr: domain.ErrForbidden},
		// The id's form is judged before the caller's right, as the
		// contract orders checks.
		{name: "customer_malformed_id", actor: func(ada, _ *domain.Principal) *domain.Principal { return ada },
			target: unlockAda, rawID: "me", wantErr: domain.ErrInvalidID},
		{name: "malformed_id", actor: asAdmin, target: unlockAda, rawID: "../x", wantErr: domain.ErrInvalidID},
		{name: "unknown_user", actor: asAdmin, target: unlockAda, rawID: domain.NewUserID(time.Now()).String(),
			wantErr: domain.ErrUserNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			root, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
			ada, customer := e.seed(t, "ada@example.com")
			grace, _ := e.seed(t, "grace@example.com")
			carl, _ := e.seed(t, "carl@example.com")
			if _, err := e.store.Users().Update(ctx, grace.ID, func(u *domain.User) error {
				u.Disabled = true
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			e.lockOut(t, "ada@example.com")
			e.lockOut(t, "grace@example.com")
			e.lockOut(t, "root@example.com")
			before := len(e.recorded(t))
			actor, to := tc.actor(customer, admin), tc.target(ada, grace, root, carl)
			id := to.ID.String()
			if tc.rawID != "" {
				id = tc.rawID
			}

			err := e.auth.Unlock(requestCtx, actor, id)
			wantErr(t, err, tc.wantErr)

			if tc.wantErr != nil {
				// Nothing changed: every lock-out holds, nothing recorded.
				for _, email := range []string{"ada@example.com", "grace@example.com", "root@example.com"} {
					if n := e.failures(t, email); n != domain.LoginFreeFailures {
						t.Errorf("%s: %d failures after a refused unlock, want %d", email, n, domain.LoginFreeFailures)
					}
				}
				if events := e.recorded(t)[before:]; len(events) != 0 {
					t.Errorf("a refused unlock recorded %+v", events)
				}
				return
			}
			// The whole count is forgotten: the right password is admitted
			// at once, without waiting out the lock-out.
			if n := e.failures(t, to.Email.String()); n != 0 {
				t.Errorf("%d failures left after the unlock", n)
			}
			_, err = e.auth.Login(ctx, application.LoginInput{Email: to.Email.String(), Password: seededPassword})
			if to.ID == grace.ID {
				wantErr(t, err, domain.ErrAccountDisabled) // checked, not refused unchecked
			} else {
				wantErr(t, err, nil)
			}
			// The others stay locked.
			for _, other := range []domain.User{ada, grace, root} {
				if other.ID == to.ID {
					continue
				}
				if n := e.failures(t, other.Email.String()); n != domain.LoginFreeFailures {
					t.Errorf("%s: %d failures, want %d: the unlock reached another email", other.Email, n, domain.LoginFreeFailures)
				}
			}
			// Audited with the admin as actor and the account as subject.
			events := e.recorded(t)[before:]
			if len(events) == 0 || !sameEvent(events[0], domain.LoginUnlockedEvent(admin.UserID, to.ID)) {
				t.Fatalf("events = %+v, want login.unlocked by %s of %s first", events, admin.UserID, to.ID)
			}
			if meta := domain.RequestMetaFrom(requestCtx); events[0].ClientIP != meta.ClientIP || events[0].RequestID != meta.RequestID {
				t.Errorf("event %+v, want the request's client IP and id", events[0])
			}
		})
	}
}

func unlockAda(ada, _, _, _ domain.User) domain.User { return ada }

// TestAuth_Unlock_gives_a_fresh_budget: after an unlock, the lock-out
// starts over from nothing: the free failures again, then 30 s.
func TestAuth_Unlock_gives_a_fresh_budget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, _ := e.seed(t, "ada@example.com")
	e.lockOut(t, "ada@example.com")
	// Deeper into the lock-out: a longer wait.
	e.clock.Advance(domain.LoginBaseDelay)
	_, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "a wrong guess"})
	wantErr(t, err, domain.ErrInvalidCredentials)
	if wait := e.lockOut(t, "ada@example.com"); wait <= domain.LoginBaseDelay {
		t.Fatalf("wait %s, want more than %s after a sixth failure", wait, domain.LoginBaseDelay)
	}

	wantErr(t, e.auth.Unlock(ctx, admin, ada.ID.String()), nil)
	if wait := e.lockOut(t, "ada@example.com"); wait != domain.LoginBaseDelay {
		t.Errorf("after the unlock, the lock-out waits %s, want it to start over at %s", wait, domain.LoginBaseDelay)
	}
	// Twice in a row is fine.
	wantErr(t, e.auth.Unlock(ctx, admin, ada.ID.String()), nil)
	wantErr(t, e.auth.Unlock(ctx, admin, ada.ID.String()), nil)
	if _, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword}); err != nil {
		t.Fatalf("login after the unlock: %v", err)
	}
}
