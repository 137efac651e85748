package application_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/softauthn"
)

// auditEnv is an env seen from the audit trail: its counters and the
// audit service.
type auditEnv struct {
	*env
	metrics *memory.SecurityMetrics
	svc     *application.AuditService
}

// newAuditEnv returns a fresh env whose events go to audit, or to the
// env's own in-memory log when audit is nil.
func newAuditEnv(t *testing.T, audit ports.AuditLog) *auditEnv {
	t.Helper()
	var opts []envOption
	if audit != nil {
		opts = append(opts, withAuditLog(audit))
	}
	e := newEnv(t, opts...)
	return &auditEnv{env: e, metrics: e.counts, svc: e.svc.Audit}
}

// trail returns every recorded event, oldest first.
func (e *auditEnv) trail(t *testing.T) []domain.AuditEvent {
	t.Helper()
	events, err := e.audit.List(ctx, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func types(events []domain.AuditEvent) []domain.AuditEventType {
	out := make([]domain.AuditEventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// requestCtx is the context of an HTTP request as the HTTP adapter makes it.
var requestCtx = domain.WithRequestMeta(context.Background(), domain.RequestMeta{RequestID: "req-42", ClientIP: "198.51.100.9"})

func TestEvents_login(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run performs the logins; the last one's event is checked.
		run         func(e *auditEnv) error
		wantErr     error
		wantType    domain.AuditEventType
		wantSubject bool
		wantActor   bool
		wantDetail  string
	}{
		{
			name: "success",
			run: func(e *auditEnv) error {
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
				return err
			},
			wantType: domain.AuditLoginSucceeded, wantSubject: true, wantActor: true, wantDetail: "via=login amr=pwd",
		},
		{
			name: "wrong_password",
			run: func(e *auditEnv) error {
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: "not it"})
				return err
			},
			wantErr: domain.ErrInvalidCredentials, wantType: domain.AuditLoginFailed, wantSubject: true,
			wantDetail: "via=login reason=wrong_password",
		},
		{
			name: "unknown_email",
			run: func(e *auditEnv) error {
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ghost@example.com", Password: "not it"})
				return err
			},
			wantErr: domain.ErrInvalidCredentials, wantType: domain.AuditLoginFailed,
			wantDetail: "via=login reason=unknown_email",
		},
		{
			name: "malformed_email",
			run: func(e *auditEnv) error {
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "hunter2-not-an-email", Password: "not it"})
				return err
			},
			wantErr: domain.ErrInvalidCredentials, wantType: domain.AuditLoginFailed,
			wantDetail: "via=login reason=malformed_email",
		},
		{
			name: "throttled",
			run: func(e *auditEnv) error {
				for range domain.LoginFreeFailures {
					_, _ = e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: "not it"})
				}
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
				return err
			},
			wantType: domain.AuditLoginThrottled, wantSubject: true, wantDetail: "via=login retry_after=30s",
		},
		{
			name: "throttled_unknown_email",
			run: func(e *auditEnv) error {
				for range domain.LoginFreeFailures {
					_, _ = e.auth.Login(requestCtx, application.LoginInput{Email: "ghost@example.com", Password: "not it"})
				}
				_, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ghost@example.com", Password: "not it"})
				return err
			},
			wantType: domain.AuditLoginThrottled, wantDetail: "via=login reason=unknown_email retry_after=30s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newAuditEnv(t, nil)
			u, _ := e.seed(t, "ada@example.com")
			err := tc.run(e)
			if tc.wantType == domain.AuditLoginThrottled {
				var tooMany *domain.TooManyAttemptsError
				if !errors.As(err, &tooMany) {
					t.Fatalf("error = %v, want a lock-out", err)
				}
			} else {
				wantErr(t, err, tc.wantErr)
			}
			trail := e.trail(t)
			if len(trail) == 0 {
				t.Fatal("no event recorded")
			}
			got := trail[len(trail)-1]
			want := domain.AuditEvent{Type: tc.wantType, ClientIP: "198.51.100.9", RequestID: "req-42", Detail: tc.wantDetail}
			if tc.wantSubject {
				want.SubjectID = u.ID
			}
			if tc.wantActor {
				want.ActorID = u.ID
			}
			if got.Type != want.Type || got.SubjectID != want.SubjectID || got.ActorID != want.ActorID ||
				got.ClientIP != want.ClientIP || got.RequestID != want.RequestID || got.Detail != want.Detail {
				t.Errorf("event = %+v\nwant    %+v", got, want)
			}
			if _, err := domain.ParseAuditID(got.ID.String()); err != nil || !got.Time.Equal(e.clock.Now()) {
				t.Errorf("event id %q, time %v; want a valid id and the clock's time", got.ID, got.Time)
			}
			if n := e.metrics.Events(tc.wantType); n < 1 {
				t.Errorf("%s counted %d times", tc.wantType, n)
			}
		})
	}
}

func TestEvents_refresh_reuse_and_logout(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	u, _ := e.seed(t, "ada@example.com")
	pair := login(t, e.env, "ada@example.com", seededPassword)
	if _, err := e.auth.Refresh(requestCtx, pair.RefreshToken); err != nil {
		t.Fatal(err)
	}
	// Within the grace window: the same successor, no event.
	next, err := e.auth.Refresh(requestCtx, pair.RefreshToken)
	wantErr(t, err, nil)
	e.clock.Advance(time.Minute)
	_, err = e.auth.Refresh(requestCtx, pair.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenReused)
	_, err = e.auth.Refresh(requestCtx, "not-a-token")
	wantErr(t, err, domain.ErrRefreshTokenInvalid)

	trail := e.trail(t)
	if got, want := types(trail), []domain.AuditEventType{
		domain.AuditLoginSucceeded, domain.AuditRefreshReuseDetected, domain.AuditSessionRevoked,
	}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	reuse, revoked := trail[1], trail[2]
	if reuse.SubjectID != u.ID || reuse.ActorID != "" || !strings.HasPrefix(reuse.Detail, "family=") {
		t.Errorf("reuse event %+v", reuse)
	}
	if revoked.SubjectID != u.ID || !strings.HasPrefix(revoked.Detail, "reason=reuse family=") {
		t.Errorf("revocation event %+v", revoked)
	}
	if e.metrics.Events(domain.AuditRefreshReuseDetected) != 1 {
		t.Errorf("reuse counted %d times", e.metrics.Events(domain.AuditRefreshReuseDetected))
	}
	for o, want := range map[ports.RefreshOutcome]int{
		ports.RefreshSucceeded: 1, ports.RefreshGraceRepeat: 1, ports.RefreshReused: 1, ports.RefreshInvalid: 1, ports.RefreshError: 0,
	} {
		if got := e.metrics.Refreshes(o); got != want {
			t.Errorf("refresh %s counted %d times, want %d", o, got, want)
		}
	}

	// Logout of a live session is recorded; of a dead one, not again.
	pair = login(t, e.env, "ada@example.com", seededPassword)
	wantErr(t, e.auth.Logout(requestCtx, pair.RefreshToken), nil)
	wantErr(t, e.auth.Logout(requestCtx, pair.RefreshToken), nil)
	wantErr(t, e.auth.Logout(requestCtx, next.RefreshToken), nil) // revoked by the reuse
	trail = e.trail(t)
	if got := types(trail[3:]); !slices.Equal(got, []domain.AuditEventType{domain.AuditLoginSucceeded, domain.AuditSessionRevoked}) {
		t.Fatalf("events after the second login: %v", got)
	}
	if last := trail[len(trail)-1]; last.ActorID != u.ID || last.SubjectID != u.ID || !strings.HasPrefix(last.Detail, "reason=logout family=") {
		t.Errorf("logout event %+v", last)
	}
}

func TestEvents_user_lifecycle(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)

	created, err := e.users.Register(requestCtx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "a long enough passphrase"})
	wantErr(t, err, nil)
	self := &domain.Principal{UserID: created.ID, Profiles: created.Profiles}
	_, err = e.users.Update(requestCtx, self, created.ID.String(), application.UpdateInput{Name: ptr("Ada")}) // no change
	wantErr(t, err, nil)
	_, err = e.users.Update(requestCtx, self, created.ID.String(), application.UpdateInput{Name: ptr("Ada King")})
	wantErr(t, err, nil)
	_, err = e.users.Update(requestCtx, self, created.ID.String(), application.UpdateInput{
		Password: ptr("another long passphrase"), CurrentPassword: ptr("wrong current one")})
	wantErr(t, err, domain.ErrInvalidCredentials)
	_, err = e.users.Update(requestCtx, admin, created.ID.String(), application.UpdateInput{
		Email: ptr("ada.king@example.com"), Profiles: []string{"ROLE_CUSTOMER", "ROLE_ADMIN"}})
	wantErr(t, err, nil)
	wantErr(t, e.users.Delete(requestCtx, admin, created.ID.String()), nil)
	_, _, err = e.users.EnsureAdmin(ctx, "Boot", "boot@example.com", "a long enough passphrase")
	wantErr(t, err, nil)

	type row struct {
		typ              domain.AuditEventType
		actor, subject   domain.UserID
		detail, clientIP string
	}
	var got []row
	for _, ev := range e.trail(t) {
		got = append(got, row{ev.Type, ev.ActorID, ev.SubjectID, ev.Detail, ev.ClientIP})
	}
	boot := e.trail(t)[len(got)-1].SubjectID
	want := []row{
		{domain.AuditUserCreated, "", created.ID, "profiles=ROLE_CUSTOMER", "198.51.100.9"},
		{domain.AuditUserUpdated, created.ID, created.ID, "fields=name", "198.51.100.9"},
		{domain.AuditLoginFailed, created.ID, created.ID, "via=current_password reason=wrong_password", "198.51.100.9"},
		{domain.AuditUserUpdated, admin.UserID, created.ID, "fields=email,profiles", "198.51.100.9"},
		{domain.AuditSessionRevoked, admin.UserID, created.ID, "reason=credential_change scope=all", "198.51.100.9"},
		{domain.AuditUserDeleted, admin.UserID, created.ID, "", "198.51.100.9"},
		{domain.AuditUserCreated, "", boot, "profiles=ROLE_ADMIN origin=operator", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("trail:\n got %v\nwant %v", got, want)
	}
}

// Every action of the admin console (edit, verify, disable and enable,
// end one or every session, reset the second factors, lift the login
// lock-out, rotate a key, delete, create) lands in the trail with the admin as actor and the
// account as subject (a key has no subject), so that the trail filtered
// by the admin, or by the account, shows it.
func TestEvents_admin_actions_name_the_admin(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, _ := e.seed(t, "ada@example.com")
	login(t, e.env, "ada@example.com", seededPassword)
	login(t, e.env, "ada@example.com", seededPassword)
	before := len(e.trail(t))
	id := ada.ID.String()

	update := func(in application.UpdateInput) {
		t.Helper()
		_, err := e.users.Update(requestCtx, admin, id, in)
		wantErr(t, err, nil)
	}
	update(application.UpdateInput{Name: ptr("Ada King")})
	update(application.UpdateInput{EmailVerified: ptr(true)})
	sessions, err := e.env.svc.Sessions.List(requestCtx, admin, id)
	wantErr(t, err, nil)
	if len(sessions) != 2 {
		t.Fatalf("%d sessions, want 2", len(sessions))
	}
	wantErr(t, e.env.svc.Sessions.Revoke(requestCtx, admin, id, sessions[0].ID), nil)
	wantErr(t, e.env.svc.Sessions.RevokeAll(requestCtx, admin, id), nil)
	update(application.UpdateInput{Disabled: ptr(true)})
	update(application.UpdateInput{Disabled: ptr(false)})
	wantErr(t, e.env.svc.MFA.Reset(requestCtx, admin, id), nil)
	wantErr(t, e.auth.Unlock(requestCtx, admin, id), nil)
	keys, err := e.keys.Rotate(requestCtx, admin, domain.RotateWhenPublished)
	wantErr(t, err, nil)
	key := keys[0]
	wantErr(t, e.users.Delete(requestCtx, admin, id), nil)
	bob, err := e.users.Register(requestCtx, admin, application.RegisterInput{Name: "Bob", Email: "bob@example.com", Password: "a long enough passphrase"})
	wantErr(t, err, nil)

	type row struct {
		typ            domain.AuditEventType
		actor, subject domain.UserID
		detail         string
	}
	var got []row
	for _, ev := range e.trail(t)[before:] {
		got = append(got, row{ev.Type, ev.ActorID, ev.SubjectID, ev.Detail})
	}
	root := admin.UserID
	want := []row{
		{domain.AuditUserUpdated, root, ada.ID, "fields=name"},
		{domain.AuditUserUpdated, root, ada.ID, "fields=emailVerified"},
		{domain.AuditSessionRevoked, root, ada.ID, "reason=revoked family=" + sessions[0].ID},
		{domain.AuditSessionRevoked, root, ada.ID, "reason=revoked scope=all"},
		{domain.AuditUserUpdated, root, ada.ID, "fields=disabled"},
		{domain.AuditSessionRevoked, root, ada.ID, "reason=credential_change scope=all"},
		{domain.AuditUserUpdated, root, ada.ID, "fields=disabled"},
		{domain.AuditMFAReset, root, ada.ID, "totp=false passkeys=0"},
		{domain.AuditSessionRevoked, root, ada.ID, "reason=mfa_reset scope=all"},
		{domain.AuditLoginUnlocked, root, ada.ID, ""},
		{domain.AuditKeyRotated, root, "", "kid=" + key.KID + " algorithm=" + key.Algorithm},
		{domain.AuditUserDeleted, root, ada.ID, ""},
		{domain.AuditUserCreated, root, bob.ID, "profiles=ROLE_CUSTOMER"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("trail of the admin's actions:\n got %v\nwant %v", got, want)
	}
	// The console's view: the trail of the account, newest first, from
	// the deletion back to the admin's first change.
	page, err := e.svc.List(requestCtx, admin, application.AuditListInput{UserID: id, Order: application.AuditNewest, Limit: "11"})
	wantErr(t, err, nil)
	if len(page.Items) != 11 || page.Items[0].Type != domain.AuditUserDeleted || page.Items[10].Detail != "fields=name" {
		t.Errorf("ada's trail, newest first: %v", types(page.Items))
	}
}

func TestEvents_current_password_lock_out_is_recorded(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	u, p := e.seed(t, "ada@example.com")
	for range domain.LoginFreeFailures {
		_, _ = e.users.Update(requestCtx, p, u.ID.String(), application.UpdateInput{
			Password: ptr("another long passphrase"), CurrentPassword: ptr("wrong current one")})
	}
	_, err := e.users.Update(requestCtx, p, u.ID.String(), application.UpdateInput{
		Password: ptr("another long passphrase"), CurrentPassword: ptr(seededPassword)})
	var tooMany *domain.TooManyAttemptsError
	if !errors.As(err, &tooMany) {
		t.Fatalf("error = %v, want a lock-out", err)
	}
	trail := e.trail(t)
	last := trail[len(trail)-1]
	if last.Type != domain.AuditLoginThrottled || last.ActorID != u.ID || last.SubjectID != u.ID ||
		last.Detail != "via=current_password retry_after=30s" {
		t.Errorf("last event %+v", last)
	}
	if n := e.metrics.Events(domain.AuditLoginFailed); n != domain.LoginFreeFailures {
		t.Errorf("%d failures counted, want %d", n, domain.LoginFreeFailures)
	}
}

// failingAuditLog cannot write; it can be told to answer slowly, to check
// that the write does not hang on the caller's cancellation.
type failingAuditLog struct {
	mu    sync.Mutex
	calls int
	// ctxErr is the error of the write's context when Record was called.
	ctxErr error
}

func (f *failingAuditLog) Record(ctx context.Context, _ domain.AuditEvent) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.ctxErr = ctx.Err()
	return fmt.Errorf("record audit event: %w", domain.ErrUnavailable)
}

func (f *failingAuditLog) List(context.Context, ports.AuditQuery) ([]domain.AuditEvent, error) {
	return nil, domain.ErrUnavailable
}

func TestEvents_audit_failure_does_not_fail_the_request(t *testing.T) {
	t.Parallel()
	failing := &failingAuditLog{}
	e := newAuditEnv(t, failing)
	e.seed(t, "ada@example.com")
	// A request whose client has gone: the write must still be attempted
	// with a live context.
	gone, cancel := context.WithCancel(requestCtx)
	cancel()
	_, err := e.auth.Login(gone, application.LoginInput{Email: "ada@example.com", Password: "not it"})
	wantErr(t, err, domain.ErrInvalidCredentials)
	_, err = e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
	wantErr(t, err, nil)

	if failing.calls != 2 || failing.ctxErr != nil {
		t.Errorf("audit writes: %d, last context error %v", failing.calls, failing.ctxErr)
	}
	if n := e.metrics.AuditWriteFailures(); n != 2 {
		t.Errorf("audit write failures counted: %d, want 2", n)
	}
	// Still counted as events: the dashboards do not depend on the table.
	if e.metrics.Events(domain.AuditLoginFailed) != 1 || e.metrics.Events(domain.AuditLoginSucceeded) != 1 {
		t.Error("events not counted when the audit write failed")
	}
	logs := e.logs.String()
	if strings.Count(logs, `"msg":"audit write failed; the event is lost"`) != 2 || !strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("audit failures not logged as errors:\n%s", logs)
	}
	// A key rotation happens whatever becomes of its event, and the
	// operator, whose command logs to standard error, hears of the loss.
	if _, err := e.keys.RotateAsOperator(ctx, domain.RotateWhenPublished); err != nil {
		t.Errorf("RotateAsOperator error = %v, want the rotation done", err)
	}
	if n := strings.Count(e.logs.String(), `"msg":"audit write failed; the event is lost"`); n != 3 {
		t.Errorf("lost key.rotated event not logged (%d lost-event lines, want 3)", n)
	}
}

// TestEvents_never_store_a_password runs a scenario full of passwords,
// right and wrong, typed into every field, and then looks for each of them
// in every stored event.
func TestEvents_never_store_a_password(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	const (
		first  = "first-Secret-Phrase-1"
		second = "second-Secret-Phrase-2"
		wrong  = "wrong-Secret-Phrase-3"
		// A password typed into the email field, shaped like an address
		// and not.
		inEmail       = "pw-in-email-field-4@example.com"
		inEmailNoAt   = "pw-in-email-field-5"
		inEmailLocked = "pw-in-email-field-6@example.com"
	)
	secrets := []string{first, second, wrong, inEmail, inEmailNoAt, inEmailLocked, "fake$"}

	u, err := e.users.Register(requestCtx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: first})
	wantErr(t, err, nil)
	pair := login(t, e.env, "ada@example.com", first)
	secrets = append(secrets, pair.RefreshToken, pair.Access.Token)
	self := &domain.Principal{UserID: u.ID, Profiles: u.Profiles}
	_, err = e.users.Update(requestCtx, self, u.ID.String(), application.UpdateInput{Password: ptr(second), CurrentPassword: ptr(wrong)})
	wantErr(t, err, domain.ErrInvalidCredentials)
	_, err = e.users.Update(requestCtx, self, u.ID.String(), application.UpdateInput{Password: ptr(second), CurrentPassword: ptr(first)})
	wantErr(t, err, nil)
	for _, email := range []string{"ada@example.com", inEmail, inEmailNoAt} {
		_, _ = e.auth.Login(requestCtx, application.LoginInput{Email: email, Password: wrong})
	}
	for range domain.LoginFreeFailures + 1 {
		_, _ = e.auth.Login(requestCtx, application.LoginInput{Email: inEmailLocked, Password: wrong})
	}
	// An admin forgets the wrong password for ada (not yet a lock-out:
	// the same to an unlock).
	wantErr(t, e.auth.Unlock(requestCtx, admin, u.ID.String()), nil)
	pair = login(t, e.env, "ada@example.com", second)
	secrets = append(secrets, pair.RefreshToken, pair.Access.Token)
	next, err := e.auth.Refresh(requestCtx, pair.RefreshToken)
	wantErr(t, err, nil)
	secrets = append(secrets, next.RefreshToken)
	e.clock.Advance(time.Minute)
	_, _ = e.auth.Refresh(requestCtx, pair.RefreshToken) // reuse
	wantErr(t, e.auth.Logout(requestCtx, next.RefreshToken), nil)

	// The links by mail: their tokens, and the new password set with one,
	// are secrets too. The notice of the password change is refused by the
	// server, for good.
	e.mailer.fail = func(m domain.Mail) error {
		if m.Template == domain.MailPasswordChanged {
			return fmt.Errorf("550 no such user: %w", domain.ErrMailRejected)
		}
		return nil
	}
	const third = "third-Secret-Phrase-7"
	secrets = append(secrets, third)
	verify := linkToken(t, onlyMail(t, e.deliver(t), domain.MailVerifyEmail))
	secrets = append(secrets, verify)
	_, err = e.env.svc.Mail.ConfirmEmail(requestCtx, verify)
	wantErr(t, err, nil)
	grace, _ := e.seed(t, "grace@example.com")
	wantErr(t, e.env.svc.Mail.RequestEmailVerification(requestCtx, grace.Email.String()), nil)
	secrets = append(secrets, linkToken(t, onlyMail(t, e.deliver(t), domain.MailVerifyEmail)))
	wantErr(t, e.env.svc.Mail.RequestPasswordReset(requestCtx, "ada@example.com"), nil)
	reset := linkToken(t, onlyMail(t, e.deliver(t), domain.MailResetPassword))
	secrets = append(secrets, reset)
	// An admin's link voids the one asked for.
	wantErr(t, e.env.svc.Mail.SendPasswordReset(requestCtx, admin, u.ID.String()), nil)
	sent := linkToken(t, onlyMail(t, e.deliver(t), domain.MailResetPassword))
	secrets = append(secrets, sent)
	wantErr(t, e.env.svc.Mail.ResetPassword(requestCtx, reset, third), domain.ErrInvalidLinkToken)
	wantErr(t, e.env.svc.Mail.ResetPassword(requestCtx, sent, third), nil)
	e.deliver(t) // the notice, given up

	// Second factors: the TOTP secret, its codes, the recovery codes and
	// the mfaToken are secrets too.
	enrol, err := e.env.svc.MFA.BeginTOTP(requestCtx, self, ptr(third))
	wantErr(t, err, nil)
	secrets = append(secrets, enrol.Secret, enrol.URI)
	code := totpCode(t, enrol.Secret, e.clock.Now())
	codes := []string{code}
	recovery, err := e.env.svc.MFA.ConfirmTOTP(requestCtx, self, &code)
	wantErr(t, err, nil)
	res, err := e.auth.Login(requestCtx, application.LoginInput{Email: "ada@example.com", Password: third})
	required := res.SecondStep
	if err != nil || required == nil {
		t.Fatalf("login: %+v, error = %v, want a second factor required", res, err)
	}
	secrets = append(secrets, required.MFAToken)
	const wrongRecovery = "zzzzz-yyyyy"
	_, err = e.auth.LoginMFA(requestCtx, application.MFALoginInput{MFAToken: &required.MFAToken, RecoveryCode: ptr(wrongRecovery)})
	wantErr(t, err, domain.ErrMFACodeRejected)
	pair, err = tokensOf(e.auth.LoginMFA(requestCtx, application.MFALoginInput{MFAToken: &required.MFAToken, RecoveryCode: &recovery[0]}))
	wantErr(t, err, nil)
	secrets = append(secrets, pair.RefreshToken, pair.Access.Token)
	e.clock.Advance(time.Minute)
	code = totpCode(t, enrol.Secret, e.clock.Now())
	codes = append(codes, code)
	renewed, err := e.env.svc.MFA.RenewRecoveryCodes(requestCtx, self, &code)
	wantErr(t, err, nil)
	e.clock.Advance(time.Minute)
	code = totpCode(t, enrol.Secret, e.clock.Now())
	codes = append(codes, code)
	wantErr(t, e.env.svc.MFA.DisableTOTP(requestCtx, self, &code), nil)
	key := softauthn.New(testOrigin)
	reg, err := e.env.svc.Passkeys.BeginRegistration(requestCtx, self, ptr(third))
	wantErr(t, err, nil)
	cred, err := key.Create(reg.PublicKey, softauthn.Faults{})
	wantErr(t, err, nil)
	passkey, err := e.env.svc.Passkeys.FinishRegistration(requestCtx, self, application.PasskeyRegistrationInput{CeremonyID: &reg.CeremonyID, Credential: cred})
	wantErr(t, err, nil)
	_, err = e.env.svc.Passkeys.Rename(requestCtx, self, string(passkey.ID), first)
	wantErr(t, err, nil)
	wantErr(t, e.env.svc.Passkeys.Delete(requestCtx, withSession(self, strongSession(e.env)), string(passkey.ID), nil), nil)
	e.registerPasskeyWith(t, self, third, softauthn.New(testOrigin))
	wantErr(t, e.env.svc.MFA.Reset(requestCtx, admin, u.ID.String()), nil)
	mfaSecrets := slices.Concat(recovery, renewed, []string{wrongRecovery, reg.CeremonyID})
	secrets = append(secrets, mfaSecrets...)

	wantErr(t, e.users.Delete(requestCtx, admin, u.ID.String()), nil)
	_, err = e.keys.RotateAsOperator(ctx, domain.RotateWhenPublished)
	wantErr(t, err, nil)

	// An OAuth client's secrets, old and new, are secrets too.
	client, err := e.env.svc.OAuthClients.Create(requestCtx, admin, clientIn("Grafana", "confidential"))
	wantErr(t, err, nil)
	clientID := client.Client.ID.String()
	_, err = e.env.svc.OAuthClients.Update(requestCtx, admin, clientID, domain.OAuthClientInput{Name: ptr(first)})
	wantErr(t, err, nil)
	rotated, err := e.env.svc.OAuthClients.RotateSecret(requestCtx, admin, clientID)
	wantErr(t, err, nil)
	_, err = e.env.svc.OAuthClients.AuthenticateClient(requestCtx, clientID, client.Secret)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
	wantErr(t, e.env.svc.OAuthClients.Delete(requestCtx, admin, clientID), nil)
	secrets = append(secrets, client.Secret, rotated, client.Client.SecretHash, domain.HashOAuthClientSecret(rotated))

	// A consent given on the consent page, and taken back: the code and
	// the tokens of the flow are secrets too.
	shop, err := e.env.svc.OAuthClients.Create(requestCtx, admin, clientIn("Shop", "public"))
	wantErr(t, err, nil)
	e.seed(t, "consent@example.com")
	browser := e.signInBrowser(t, "consent@example.com")
	flow, err := e.env.svc.Provider.Authorize(requestCtx, authorizeInput(shop.Client.ID))
	wantErr(t, err, nil)
	consented, err := e.env.svc.Provider.Consent(requestCtx, flow, browser, true)
	wantErr(t, err, nil)
	flowCode := redirected(t, consented.Location).Get("code")
	granted, err := e.env.svc.Provider.ExchangeCode(requestCtx, shop.Client, flowCode, appCallback, pkceVerifier)
	wantErr(t, err, nil)
	owner := &domain.Principal{UserID: browser.UserID, Profiles: domain.Profiles{domain.ProfileCustomer}}
	wantErr(t, e.env.svc.Provider.RevokeGrant(requestCtx, owner, shop.Client.ID.String()), nil)
	secrets = append(secrets, flowCode, granted.AccessToken, granted.IDToken, granted.RefreshToken, pkceVerifier)

	// An identity provider's client secret, old and new, is a secret too.
	idp := providerIn("acme")
	_, err = e.env.svc.IdentityProviders.CreateIdentityProvider(requestCtx, admin, idp)
	wantErr(t, err, nil)
	_, err = e.env.svc.IdentityProviders.UpdateIdentityProvider(requestCtx, admin, "acme",
		domain.IdentityProviderInput{ClientSecret: ptr("provider-secret-2"), DisplayName: ptr("Acme")})
	wantErr(t, err, nil)
	// A sign-in through it that makes an account, a refused one, a link
	// from an account and its unlinking: the flow's state, nonce,
	// verifier and code are secrets too.
	fed := &fedEnv{auditEnv: e, admin: admin}
	newcomer := domain.ExternalIdentity{Subject: "sub-newcomer", Email: "newcomer@example.com", EmailVerified: true}
	signedUp, err := fed.flow(t, "acme", nil, newcomer, nil)
	wantErr(t, err, nil)
	if signedUp.SignIn == nil || signedUp.SignIn.Tokens == nil {
		t.Fatalf("sign-up through the provider: %+v", signedUp)
	}
	_, err = fed.flow(t, "acme", nil, person, domain.FederationRefused(domain.RefusedNonceMismatch, errors.New("nonce")))
	if domain.FederationReason(err) != domain.RefusedNonceMismatch {
		t.Fatalf("refused flow: %v", err)
	}
	_, linker := e.seed(t, "linker@example.com")
	other := domain.ExternalIdentity{Subject: "sub-linker", Email: "linker@example.com", EmailVerified: true}
	st, err := e.env.svc.Federation.Start(requestCtx, "acme", "/account/", linker)
	wantErr(t, err, nil)
	code, state := e.upstream.Approve(st.Location, other)
	_, err = e.env.svc.Federation.Finish(requestCtx, &st.Flow, "acme", application.FederationCallback{State: state, Code: code})
	wantErr(t, err, nil)
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(requestCtx, linker, linker.UserID.String(), "acme"), nil)
	secrets = append(secrets, st.Flow.State, st.Flow.Nonce, st.Flow.Verifier, code, signedUp.SignIn.Tokens.RefreshToken)

	// A personal access token, made and revoked: the token is a secret.
	holder, holderP := e.seed(t, "holder@example.com")
	pat, err := e.env.svc.Tokens.Create(requestCtx, holderP, holder.ID.String(),
		application.CreateTokenInput{Name: "CI", Scopes: []string{"users:read"}})
	wantErr(t, err, nil)
	wantErr(t, e.env.svc.Tokens.Revoke(requestCtx, holderP, holder.ID.String(), string(pat.ID)), nil)
	secrets = append(secrets, pat.Token, pat.Hash)

	wantErr(t, e.env.svc.IdentityProviders.DeleteIdentityProvider(requestCtx, admin, "acme"), nil)
	secrets = append(secrets, *idp.ClientSecret, "provider-secret-2")

	trail := e.trail(t)
	seen := map[domain.AuditEventType]bool{}
	for _, ev := range trail {
		seen[ev.Type] = true
		text := fmt.Sprintf("%+v", ev)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("event %s holds the secret %q", text, s)
			}
		}
		for _, c := range mfaSecrets {
			if strings.Contains(strings.ToLower(text), c) {
				t.Errorf("event %s holds the code %q", text, c)
			}
		}
		for _, c := range codes {
			if holdsCode(text, c) {
				t.Errorf("event %s holds the TOTP code %q", text, c)
			}
		}
	}
	// Nor do the logs.
	logs := e.logs.String()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold the secret %q", s)
		}
	}
	for _, c := range mfaSecrets {
		if strings.Contains(strings.ToLower(logs), c) {
			t.Errorf("the logs hold the code %q", c)
		}
	}
	for _, c := range codes {
		if holdsCode(logs, c) {
			t.Errorf("the logs hold the TOTP code %q", c)
		}
	}
	// The scenario covers every event type, so every kind of row was checked.
	for _, typ := range domain.AuditEventTypes {
		if !seen[typ] {
			t.Errorf("the scenario recorded no %s event", typ)
		}
	}
}

func TestAuditService_List(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	_, customer := e.seed(t, "ada@example.com")
	for range 5 {
		_, _ = e.auth.Login(requestCtx, application.LoginInput{Email: "ghost@example.com", Password: "not it"})
	}

	_, err := e.svc.List(ctx, nil, application.AuditListInput{})
	wantErr(t, err, domain.ErrUnauthenticated)
	_, err = e.svc.List(ctx, customer, application.AuditListInput{})
	wantErr(t, err, domain.ErrForbidden)
	_, err = e.svc.List(ctx, &domain.Principal{UserID: domain.NewUserID(e.clock.Now()), Profiles: domain.Profiles{domain.ProfileAdmin}}, application.AuditListInput{})
	wantErr(t, err, domain.ErrInvalidToken)
	for _, in := range []application.AuditListInput{{Limit: "-1"}, {Limit: "201"}, {Limit: "ten"}, {After: "nope"}, {After: strings.Repeat("0", 24)}} {
		_, err := e.svc.List(ctx, customer, in)
		var perr *domain.PageError
		if !errors.As(err, &perr) {
			t.Errorf("List(%+v) error = %v, want a page error (before the 403)", in, err)
		}
	}

	var all []domain.AuditEvent
	in := application.AuditListInput{Limit: "2"}
	for pages := 1; ; pages++ {
		page, err := e.svc.List(ctx, admin, in)
		wantErr(t, err, nil)
		all = append(all, page.Items...)
		if page.Next == "" {
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
			break
		}
		in.After = page.Next.String()
	}
	if len(all) != 5 || !slices.IsSortedFunc(all, func(a, b domain.AuditEvent) int { return strings.Compare(string(a.ID), string(b.ID)) }) {
		t.Errorf("pages hold %d events (sorted: %v), want 5 in order", len(all), slices.IsSortedFunc(all, func(a, b domain.AuditEvent) int { return strings.Compare(string(a.ID), string(b.ID)) }))
	}
	page, err := e.svc.List(ctx, admin, application.AuditListInput{})
	wantErr(t, err, nil)
	if len(page.Items) != 5 || page.Next != "" {
		t.Errorf("default page: %d events, next %q", len(page.Items), page.Next)
	}
}

func TestAuditService_List_filters(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, customer := e.seed(t, "ada@example.com")
	bob, _ := e.seed(t, "bob@example.com")
	// ada as subject (0, 2), as actor and subject (1), as actor (3); none
	// of them (4, 5).
	for i, ev := range []domain.AuditEvent{
		domain.LoginFailedEvent("", ada.ID, domain.CheckLogin, domain.FailureWrongPassword),
		domain.LoginSucceededEvent(ada.ID, domain.AMRPassword),
		domain.UserUpdatedEvent(admin.UserID, ada.ID, []string{"disabled"}),
		domain.SessionRevokedEvent(ada.ID, bob.ID, domain.EndedByRevocation, ""),
		domain.LoginFailedEvent("", bob.ID, domain.CheckLogin, domain.FailureWrongPassword),
		domain.KeyRotatedEvent(admin.UserID, "kid-1", "EdDSA", domain.OriginAPI),
	} {
		ev.Time = e.clock.Now().Add(time.Duration(i) * time.Millisecond)
		ev.ID = domain.NewAuditID(ev.Time)
		if err := e.audit.Record(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	all := e.trail(t)
	list := func(t *testing.T, in application.AuditListInput) []domain.AuditEvent {
		t.Helper()
		var got []domain.AuditEvent
		for pages := 0; ; pages++ {
			if pages > len(all) {
				t.Fatal("pagination does not end")
			}
			page, err := e.svc.List(ctx, admin, in)
			wantErr(t, err, nil)
			got = append(got, page.Items...)
			if page.Next == "" {
				return got
			}
			in.After = page.Next.String()
		}
	}
	pick := func(idx ...int) []domain.AuditEvent {
		var out []domain.AuditEvent
		for _, i := range idx {
			out = append(out, all[i])
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   application.AuditListInput
		want []domain.AuditEvent
	}{
		{"oldest_by_default", application.AuditListInput{Limit: "4"}, all},
		{"oldest", application.AuditListInput{Limit: "4", Order: "oldest"}, all},
		{"newest", application.AuditListInput{Limit: "4", Order: "newest"}, pick(5, 4, 3, 2, 1, 0)},
		{"user_as_actor_or_subject", application.AuditListInput{Limit: "2", UserID: ada.ID.String()}, pick(0, 1, 2, 3)},
		{"user_newest", application.AuditListInput{Limit: "3", UserID: ada.ID.String(), Order: "newest"}, pick(3, 2, 1, 0)},
		{"type", application.AuditListInput{Limit: "1", Type: "login.failed"}, pick(0, 4)},
		{"user_and_type_newest", application.AuditListInput{Limit: "1", UserID: bob.ID.String(), Type: "login.failed", Order: "newest"}, pick(4)},
		{"type_without_events", application.AuditListInput{Type: "mfa.reset"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(t, tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("events:\n got %v\nwant %v", types(got), types(tc.want))
			}
		})
	}

	// The filters are judged with the form of the request, each bad one
	// named, before the caller's rights; after the page's bounds.
	for _, tc := range []struct {
		name   string
		in     application.AuditListInput
		fields []string
	}{
		{"bad_user", application.AuditListInput{UserID: "ada"}, []string{"userId"}},
		{"audit_id_as_user", application.AuditListInput{UserID: string(all[0].ID)}, []string{"userId"}},
		{"bad_type", application.AuditListInput{Type: "login.*"}, []string{"type"}},
		{"bad_order", application.AuditListInput{Order: "desc"}, []string{"order"}},
		{"all_bad", application.AuditListInput{UserID: "x", Type: "y", Order: "z"}, []string{"userId", "type", "order"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []*domain.Principal{admin, customer} {
				_, err := e.svc.List(ctx, p, tc.in)
				verr, ok := errors.AsType[*domain.ValidationError](err)
				if !ok {
					t.Fatalf("error = %v, want a validation error", err)
				}
				var fields []string
				for _, f := range verr.Fields {
					fields = append(fields, f.Field)
				}
				if !slices.Equal(fields, tc.fields) {
					t.Errorf("fields %v, want %v", fields, tc.fields)
				}
			}
		})
	}
	_, err := e.svc.List(ctx, customer, application.AuditListInput{Limit: "0", Type: "nope"})
	if _, ok := errors.AsType[*domain.PageError](err); !ok {
		t.Errorf("bad limit and type: error = %v, want the page error first", err)
	}
	_, err = e.svc.List(ctx, customer, application.AuditListInput{UserID: ada.ID.String(), Type: "login.failed", Order: "newest"})
	wantErr(t, err, domain.ErrForbidden)
}

// A rotation that adds the OpenID provider's key beside the access-token
// key records each, in that order, and says so in the log.
func TestEvents_a_rotation_records_each_key_added(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withProviderKeys)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	keys, err := e.keys.Rotate(requestCtx, admin, domain.RotateWhenPublished)
	wantErr(t, err, nil)
	if len(keys) != 2 || keys[0].Purpose != domain.KeyPurposeAccessToken || keys[1].Purpose != domain.KeyPurposeOIDC {
		t.Fatalf("Rotate = %+v, want the access-token key then the provider's", keys)
	}
	page, err := e.svc.Audit.List(ctx, admin, application.AuditListInput{Type: string(domain.AuditKeyRotated)})
	wantErr(t, err, nil)
	var got []string
	for _, ev := range page.Items {
		got = append(got, ev.Detail)
	}
	want := []string{"kid=" + keys[0].KID + " algorithm=EdDSA", "kid=" + keys[1].KID + " algorithm=RS256"}
	if !slices.Equal(got, want) {
		t.Errorf("key.rotated events: %q, want %q", got, want)
	}
	if logs := e.logs.String(); !strings.Contains(logs, `"purpose":"oidc-signing"`) || !strings.Contains(logs, `"purpose":"access-token"`) {
		t.Errorf("the log does not name each key's purpose:\n%s", logs)
	}
}

// Events recorded at the same clock reading keep their order.
func TestEvents_ids_increase_within_one_instant(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	for range 50 {
		_, err := e.keys.RotateAsOperator(ctx, domain.RotateWhenPublished)
		wantErr(t, err, nil)
	}
	got := e.trail(t)
	if len(got) != 50 {
		t.Fatalf("%d events, want 50", len(got))
	}
	for i, ev := range got {
		if want := fmt.Sprintf("kid=kid-%02d algorithm=EdDSA origin=operator", i); ev.Detail != want {
			t.Fatalf("event %d: %q, want %q", i, ev.Detail, want)
		}
	}
}

// Without an audit log or metrics, the use cases work and the trail is
// empty.
func TestEvents_without_audit_log_records_nothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withoutEvents)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	_, err := e.keys.RotateAsOperator(ctx, domain.RotateWhenPublished)
	wantErr(t, err, nil)
	login(t, e, "root@example.com", seededPassword)
	page, err := e.svc.Audit.List(ctx, admin, application.AuditListInput{})
	wantErr(t, err, nil)
	if len(page.Items) != 0 || page.Next != "" {
		t.Errorf("page %+v, want empty", page)
	}
}

// holdsCode reports whether text holds the six digits of a TOTP code as a
// word of its own, not inside a longer run of letters and digits such as
// an id, where they may occur by chance.
func holdsCode(text, code string) bool {
	alnum := func(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
	for i := 0; ; {
		j := strings.Index(text[i:], code)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(code)
		if (start == 0 || !alnum(text[start-1])) && (end == len(text) || !alnum(text[end])) {
			return true
		}
		i = start + 1
	}
}

// onlyMail returns the one message of the template among sent.
func onlyMail(t *testing.T, sent []domain.Mail, template domain.MailTemplate) domain.Mail {
	t.Helper()
	var found []domain.Mail
	for _, m := range sent {
		if m.Template == template {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s messages among %d sent, want 1", len(found), template, len(sent))
	}
	return found[0]
}

// linkToken is the token of the link a message carries.
func linkToken(t *testing.T, m domain.Mail) string {
	t.Helper()
	u, err := url.Parse(m.Data["link"])
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("message %s has no link with a token: %q", m.Template, m.Data["link"])
	}
	return u.Query().Get("token")
}
