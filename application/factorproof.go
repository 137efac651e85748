package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// proveFactorChange checks that actor, signed in as self, has proven to be
// the account's owner for change, as domain.ProofToChangeFactors says:
// nothing more than its session, or its current password, checked under
// the per-email lock-out like a login's (a stolen access token guessing
// at it is refused after a few tries, and audited). A password that is
// asked for and missing is a validation error of FieldCurrentPassword.
func (f *secondFactors) proveFactorChange(ctx context.Context, actor *domain.Principal, self domain.User,
	change domain.FactorChange, currentPassword *string) error {
	sent := currentPassword != nil && *currentPassword != ""
	proof, err := actor.ProofToChangeFactors(self, change, sent, f.clock.Now())
	if err != nil || proof == domain.ProofSession {
		return err
	}
	if !sent {
		verr := &domain.ValidationError{}
		verr.Add(FieldCurrentPassword, "must not be empty")
		return verr
	}
	return f.password.check(ctx, actor, self, *currentPassword)
}

// spendCodeCounted is spendCodeNoted for a signed-in caller proving itself
// with a code (turning TOTP off, renewing recovery codes). The check is
// reserved under the email's lock-out first, as a login's second step is:
// without it a stolen access token could guess at the codes as fast as
// it can send them. A wrong code counts as a failure and is audited; a
// right one gives its reservation back without forgetting the email's
// other failures (as in a login, only a whole sign-in clears them).
func (f *secondFactors) spendCodeCounted(ctx context.Context, actor *domain.Principal, self domain.User, totp *domain.TOTPFactor, code string) error {
	rec, err := f.throttle.reserve(ctx, self.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			f.events.note(ctx, domain.LoginThrottledEvent(actor.UserID, self.ID, domain.CheckFactorCode, "", tooMany.RetryAfter))
		}
		return err
	}
	err = f.spendCodeNoted(ctx, self.ID, totp, code)
	if errors.Is(err, domain.ErrInvalidMFACode) {
		_ = f.throttle.failed(ctx, rec)
		f.events.note(ctx, domain.LoginFailedEvent(actor.UserID, self.ID, domain.CheckFactorCode, domain.FailureWrongCode))
		return err
	}
	return f.throttle.unchecked(ctx, self.Email, err)
}

// queueFactorNotice queues, in ctx's transaction, the notice to u that a
// second factor of kind factor (a domain.Factor… kind) was added or
// removed (template): the owner learns of a factor they did not add, or
// of protection they did not take away. Like every message, it names the
// account only once its address is verified (User.Addressee).
func (f *secondFactors) queueFactorNotice(ctx context.Context, u domain.User, template domain.MailTemplate, factor string) error {
	return f.mail.enqueue(ctx, domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: template,
		Lang: domain.RequestMetaFrom(ctx).Lang, Data: map[string]string{"factor": factor}}, false)
}

// currentPassword verifies the current password of a signed-in caller (a
// change of its password or email, adding a second factor) under the same
// per-email lock-out as login, and records failures and refusals as login
// events: a stolen access token guessing at the password is exactly what
// the audit trail must show.
type currentPassword struct {
	core
	hasher ports.PasswordHasher
}

// check verifies password as u's, for actor: a wrong one counts against
// u's email and is recorded as a failed login (via current_password), a
// right one forgets the email's failures, as a right password at login
// does.
func (c currentPassword) check(ctx context.Context, actor *domain.Principal, u domain.User, password string) error {
	rec, err := c.throttle.reserve(ctx, u.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			c.events.note(ctx, domain.LoginThrottledEvent(actor.UserID, u.ID, domain.CheckCurrentPassword, "", tooMany.RetryAfter))
		}
		return err
	}
	ok, err := false, error(nil)
	if u.HasPassword() {
		// An account without a password (made by a sign-in through
		// another provider) has no right answer.
		ok, _, err = c.hasher.Verify(ctx, u.PasswordHash, password)
	}
	if err != nil {
		return c.throttle.unchecked(ctx, u.Email, fmt.Errorf("verify current password: %w", err))
	}
	if !ok {
		err := c.throttle.failed(ctx, rec)
		c.events.note(ctx, domain.LoginFailedEvent(actor.UserID, u.ID, domain.CheckCurrentPassword, domain.FailureWrongPassword))
		return err
	}
	return c.throttle.succeeded(ctx, u.Email)
}
