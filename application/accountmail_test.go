package application_test

import (
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// withMailBudget sets the per-account budget of the request routes.
func withMailBudget(b domain.MailBudget) envOption {
	return func(c *application.Config, _ *application.Deps) { c.MailBudget = b }
}

// queued is how many outbox messages wait.
func (e *env) queued(t *testing.T) int {
	t.Helper()
	n, _, err := e.store.Outbox(testBox).Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMail_SendPasswordReset(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// actor and target pick the caller and the path id among the
		// env's accounts: ada (a customer, the usual target), grace
		// (disabled), root (an admin).
		actor   func(ada, root *domain.Principal) *domain.Principal
		target  func(ada, grace domain.User) string
		wantErr error
	}{
		{name: "admin", actor: asAdmin, target: toAda},
		{name: "admin_to_itself", actor: asAdmin, target: func(domain.User, domain.User) string { return "" }},
		{name: "anonymous", actor: func(*domain.Principal, *domain.Principal) *domain.Principal { return nil },
			target: toAda, wantErr: domain.ErrUnauthenticated},
		{name: "customer", actor: func(ada, _ *domain.Principal) *domain.Principal { return ada },
			target: toAda, wantErr: domain.ErrForbidden},
		// The id's form is judged before the caller's right, as the
		// contract orders checks.
		{name: "customer_malformed_id", actor: func(ada, _ *domain.Principal) *domain.Principal { return ada },
			target: func(domain.User, domain.User) string { return "me" }, wantErr: domain.ErrInvalidID},
		{name: "malformed_id", actor: asAdmin, target: func(domain.User, domain.User) string { return "../x" },
			wantErr: domain.ErrInvalidID},
		{name: "unknown_user", actor: asAdmin,
			target:  func(domain.User, domain.User) string { return domain.NewUserID(time.Now()).String() },
			wantErr: domain.ErrUserNotFound},
		{name: "disabled_user", actor: asAdmin, target: func(_, grace domain.User) string { return grace.ID.String() },
			wantErr: domain.ErrUserDisabled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			root, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
			ada, customer := e.seed(t, "ada@example.com")
			grace, _ := e.seed(t, "grace@example.com")
			if _, err := e.store.Users().Update(ctx, grace.ID, func(u *domain.User) error {
				u.Disabled = true
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			actor, id := tc.actor(customer, admin), tc.target(ada, grace)
			to := ada
			if id == "" {
				id, to = root.ID.String(), root
			}

			err := e.svc.Mail.SendPasswordReset(requestCtx, actor, id)
			wantErr(t, err, tc.wantErr)

			if tc.wantErr != nil {
				if n := e.queued(t); n != 0 {
					t.Errorf("%d messages queued after a refused send", n)
				}
				if events := e.recorded(t); len(events) != 0 {
					t.Errorf("a refused send recorded %+v", events)
				}
				return
			}
			// The link is queued, not sent inline, and goes to the
			// account's address.
			if n := e.queued(t); n != 1 {
				t.Fatalf("%d messages queued, want the reset link", n)
			}
			m := onlyMail(t, e.deliver(t), domain.MailResetPassword)
			if m.To != to.Email || m.User != to.ID {
				t.Errorf("the link went to %s (%s), want %s (%s)", m.To, m.User, to.Email, to.ID)
			}
			wantErr(t, e.svc.Mail.ResetPassword(ctx, linkToken(t, m), "a brand new passphrase"), nil)
			// Audited with the admin as actor, and only that event (the
			// reset's own events follow it).
			events := e.recorded(t)
			if len(events) == 0 || !sameEvent(events[0], domain.PasswordResetRequestedEvent(admin.UserID, to.ID)) {
				t.Fatalf("events = %+v, want password_reset.requested by %s of %s first", events, admin.UserID, to.ID)
			}
			if events[0].Detail != "by=admin" || events[0].ClientIP != domain.RequestMetaFrom(requestCtx).ClientIP {
				t.Errorf("event %+v, want by=admin and the request's client IP", events[0])
			}
		})
	}
}

func asAdmin(_, root *domain.Principal) *domain.Principal { return root }

func toAda(ada, _ domain.User) string { return ada.ID.String() }

// TestMail_SendPasswordReset_voids_earlier_links: an admin's link is the
// only one that works, as after a request.
func TestMail_SendPasswordReset_voids_earlier_links(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, _ := e.seed(t, "ada@example.com")
	wantErr(t, e.svc.Mail.RequestPasswordReset(ctx, ada.Email.String()), nil)
	asked := linkToken(t, onlyMail(t, e.deliver(t), domain.MailResetPassword))

	wantErr(t, e.svc.Mail.SendPasswordReset(ctx, admin, ada.ID.String()), nil)
	sent := linkToken(t, onlyMail(t, e.deliver(t), domain.MailResetPassword))

	wantErr(t, e.svc.Mail.ResetPassword(ctx, asked, "a brand new passphrase"), domain.ErrInvalidLinkToken)
	wantErr(t, e.svc.Mail.ResetPassword(ctx, sent, "a brand new passphrase"), nil)
}

// TestMail_SendPasswordReset_and_the_mail_budget: the budget of the
// request routes neither stops an admin's link nor counts it.
func TestMail_SendPasswordReset_and_the_mail_budget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMailBudget(domain.MailBudget{MinInterval: time.Minute, MaxPerHour: 1}))
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, _ := e.seed(t, "ada@example.com")
	resets := func() int {
		t.Helper()
		n := 0
		for _, m := range e.deliver(t) {
			if m.Template == domain.MailResetPassword {
				n++
			}
		}
		return n
	}

	// An admin's link first: the user may still ask for one.
	wantErr(t, e.svc.Mail.SendPasswordReset(ctx, admin, ada.ID.String()), nil)
	if n := resets(); n != 1 {
		t.Fatalf("%d links after the admin's send, want 1", n)
	}
	wantErr(t, e.svc.Mail.RequestPasswordReset(ctx, ada.Email.String()), nil)
	if n := resets(); n != 1 {
		t.Fatalf("%d links after the user's request, want 1: the admin's link used none of the budget", n)
	}
	// The budget is spent now: a request sends nothing, an admin still
	// does.
	wantErr(t, e.svc.Mail.RequestPasswordReset(ctx, ada.Email.String()), nil)
	if n := resets(); n != 0 {
		t.Fatalf("%d links beyond the budget, want 0", n)
	}
	wantErr(t, e.svc.Mail.SendPasswordReset(ctx, admin, ada.ID.String()), nil)
	if n := resets(); n != 1 {
		t.Errorf("%d links from the admin beyond the budget, want 1", n)
	}
}
