package application

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
)

// proveFactorChange checks that actor, signed in as self, has proven to be
// the account's owner for change, as domain.ProofToChangeFactors says:
// nothing more than its session, or its current password, checked under
// the per-email lock-out like a login's (a stolen access token guessing
// at it is refused after a few tries, and audited). A password that is
// asked for and missing is a validation error of FieldCurrentPassword.
func (b *base) proveFactorChange(ctx context.Context, actor *domain.Principal, self domain.User,
	change domain.FactorChange, currentPassword *string) error {
	sent := currentPassword != nil && *currentPassword != ""
	proof, err := actor.ProofToChangeFactors(self, change, sent, b.clock.Now())
	if err != nil || proof == domain.ProofSession {
		return err
	}
	if !sent {
		verr := &domain.ValidationError{}
		verr.Add(FieldCurrentPassword, "must not be empty")
		return verr
	}
	return b.checkCurrentPassword(ctx, actor, self, *currentPassword)
}

// spendCodeCounted is spendCodeNoted for a signed-in caller proving itself
// with a code (turning TOTP off, renewing recovery codes). The check is
// reserved under the email's lock-out first, as a login's second step is:
// without it a stolen access token could guess at the codes as fast as
// it can send them. A wrong code counts as a failure and is audited; a
// right one gives its reservation back without forgetting the email's
// other failures (as in a login, only a whole sign-in clears them).
func (b *base) spendCodeCounted(ctx context.Context, actor *domain.Principal, self domain.User, f *domain.TOTPFactor, code string) error {
	rec, err := b.throttle.reserve(ctx, self.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			b.events.note(ctx, domain.LoginThrottledEvent(actor.UserID, self.ID, domain.CheckFactorCode, "", tooMany.RetryAfter))
		}
		return err
	}
	err = b.spendCodeNoted(ctx, self.ID, f, code)
	if errors.Is(err, domain.ErrInvalidMFACode) {
		_ = b.throttle.failed(ctx, rec)
		b.events.note(ctx, domain.LoginFailedEvent(actor.UserID, self.ID, domain.CheckFactorCode, domain.FailureWrongCode))
		return err
	}
	return b.throttle.unchecked(ctx, self.Email, err)
}

// queueFactorNotice queues, in ctx's transaction, the notice to u that a
// second factor of kind factor (a domain.Factor… kind) was added or
// removed (template): the owner learns of a factor they did not add, or
// of protection they did not take away. Like every message, it names the
// account only once its address is verified (User.Addressee).
func (b *base) queueFactorNotice(ctx context.Context, u domain.User, template domain.MailTemplate, factor string) error {
	return b.enqueueMail(ctx, domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: template,
		Lang: domain.RequestMetaFrom(ctx).Lang, Data: map[string]string{"factor": factor}}, false)
}
