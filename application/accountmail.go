package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// MailService serves the links userd sends by mail: a request for a
// verification or reset link, an admin's sending of a reset link, and the
// use of one.
type MailService struct {
	core
	mailPorts
}

// mailPorts are what the MailService uses.
type mailPorts struct {
	users  ports.UserRepository
	links  ports.LinkTokenStore
	outbox ports.Outbox
	tokens ports.RefreshTokenStore
	tx     ports.Transactor
	hasher ports.PasswordHasher
	// mail queues the links; webhooks and sessionEnds carry out a reset.
	mail        *mailQueue
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	delivery    wakeup
}

// RequestEmailVerification asks for a verification link for email. The
// answer is the same whether or not an account has the email, and takes
// the same time: the request is queued as it is and looked at by the
// sender (DeliveryService), which sends a link only to an existing account
// whose email is not verified yet, within the account's mail budget.
func (s *MailService) RequestEmailVerification(ctx context.Context, email string) error {
	return s.queueRequest(ctx, domain.LinkVerifyEmail, email)
}

// RequestPasswordReset asks for a reset link for email, answered like
// RequestEmailVerification; a link goes only to an existing, enabled
// account, and voids its earlier reset links.
func (s *MailService) RequestPasswordReset(ctx context.Context, email string) error {
	return s.queueRequest(ctx, domain.LinkResetPassword, email)
}

// SendPasswordReset sends the user a reset link, at an admin's hand (the
// admin console's "send a password reset"): the link the user would get by
// asking for one, made and queued the same way, and the account's earlier
// reset links void. Admins only; the checks come in the contract's order
// (signed in, the id's form, admin, the user exists). A disabled account
// gets no reset link, as on request, but here the admin is told:
// domain.ErrUserDisabled.
//
// The account's mail budget neither limits nor counts the link: the budget
// keeps anonymous requests from flooding a mailbox, while this caller is a
// signed-in admin whose every send is in the audit trail, and who must
// not be answered "sent" for a link that was not; nor should the admin's
// send use up what the user may ask for.
func (s *MailService) SendPasswordReset(ctx context.Context, actor *domain.Principal, rawUserID string) error {
	id, err := adminOnUser(ctx, s.users, actor, rawUserID)
	if err != nil {
		return err
	}
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		u, err := s.users.ByID(ctx, id)
		if err != nil {
			return err
		}
		if !wantsLink(u, domain.LinkResetPassword) {
			return domain.ErrUserDisabled
		}
		_, err = s.mail.replaceLink(ctx, u, domain.LinkResetPassword, false, domain.RequestMetaFrom(ctx).Lang, time.Time{})
		return err
	})
	if err != nil {
		return err
	}
	s.delivery.wake()
	s.events.note(ctx, domain.PasswordResetRequestedEvent(actor.UserID, id))
	s.log.LogAttrs(ctx, slog.LevelInfo, "password reset link sent by an admin", slog.String("user_id", id.String()),
		slog.String("admin_id", actor.UserID.String()))
	return nil
}

// queueRequest queues a request for a link of purpose (queueMailRequest).
func (s *MailService) queueRequest(ctx context.Context, purpose domain.LinkPurpose, raw string) error {
	return queueMailRequest(ctx, s.core, s.outbox, s.delivery, purpose, raw)
}

// queueMailRequest checks the form of the email (a malformed one cannot
// be an account's: saying so tells nothing) and queues the request for a
// link of purpose, for the sender to answer: the same work whatever the
// email.
func queueMailRequest(ctx context.Context, c core, outbox ports.Outbox, delivery wakeup, purpose domain.LinkPurpose, raw string) error {
	email, msg := domain.ParseEmail(raw)
	if msg != "" {
		verr := &domain.ValidationError{}
		verr.Add(domain.FieldEmail, msg)
		return verr
	}
	now := c.clock.Now()
	payload, err := json.Marshal(domain.MailRequest{Purpose: purpose, Email: email,
		Lang: domain.RequestMetaFrom(ctx).Lang, At: now})
	if err != nil {
		return fmt.Errorf("queue mail request: %w", err)
	}
	m := domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMailRequest,
		Payload: payload, CreatedAt: now, NextAttemptAt: now}
	if err := outbox.Enqueue(ctx, m); err != nil {
		return fmt.Errorf("queue mail request: %w", err)
	}
	delivery.wake()
	return nil
}

// ConfirmEmail uses a verification link's token: the account's email is
// verified. Any token that cannot serve (unknown, used, expired, of the
// other purpose, or sent to an address the account no longer has) is
// domain.ErrInvalidLinkToken.
func (s *MailService) ConfirmEmail(ctx context.Context, token string) (domain.User, error) {
	if !domain.WellFormedLinkToken(token) {
		return domain.User{}, domain.ErrInvalidLinkToken
	}
	var verified domain.User
	err := s.tx.WithinTx(ctx, func(ctx context.Context) error {
		now := s.clock.Now()
		t, err := s.links.Use(ctx, domain.HashLinkToken(token), domain.LinkVerifyEmail, now)
		if err != nil {
			return err
		}
		// Use has checked purpose, use and expiry; what is left is whether
		// the token is still this account's.
		verified, err = s.users.Update(ctx, t.UserID, func(u *domain.User) error {
			if !t.BelongsTo(*u) {
				return domain.ErrInvalidLinkToken
			}
			u.EmailVerified, u.UpdatedAt = true, now
			return nil
		})
		if err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookUserEmailVerified, verified.ID, nil)
	})
	if err != nil {
		return domain.User{}, tokenError(err)
	}
	s.events.note(ctx, domain.EmailVerificationCompletedEvent(verified.ID))
	s.log.LogAttrs(ctx, slog.LevelInfo, "email verified", slog.String("user_id", verified.ID.String()))
	return verified, nil
}

// ResetPassword uses a reset link's token to set password: the password is
// set, every session of the account ends, its email counts as verified
// (the link proved it), its login lock-out is cleared, and a notice is
// mailed. A password that fails the policy is a *domain.ValidationError
// and leaves the token usable; a token that cannot serve is
// domain.ErrInvalidLinkToken.
func (s *MailService) ResetPassword(ctx context.Context, token, password string) error {
	if !domain.WellFormedLinkToken(token) {
		return domain.ErrInvalidLinkToken
	}
	hash := domain.HashLinkToken(token)
	now := s.clock.Now()
	// A look first, to judge the password against the account's email and
	// hash it outside the transaction (it takes tens of milliseconds, and
	// must not hold the write lock); the token is used in the transaction
	// below, which a concurrent use of it cannot also win.
	t, u, err := s.peek(ctx, hash, domain.LinkResetPassword, now)
	if err != nil {
		return err
	}
	normalized := s.hasher.Normalize(password)
	if msg := domain.CheckPassword(normalized, u.Email); msg != "" {
		verr := &domain.ValidationError{}
		verr.Add(domain.FieldPassword, msg)
		return verr
	}
	newHash, err := s.hasher.Hash(ctx, normalized)
	if err != nil {
		return fmt.Errorf("hash password: %w", err)
	}
	var (
		reset domain.User
		ended []string
	)
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		now := s.clock.Now()
		if _, err := s.links.Use(ctx, hash, domain.LinkResetPassword, now); err != nil {
			return err
		}
		reset, err = s.users.Update(ctx, t.UserID, func(u *domain.User) error {
			if !t.BelongsTo(*u) {
				return domain.ErrInvalidLinkToken
			}
			u.PasswordHash, u.EmailVerified, u.UpdatedAt = newHash, true, now
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.links.Void(ctx, reset.ID, domain.LinkResetPassword, now); err != nil {
			return fmt.Errorf("void reset links: %w", err)
		}
		if ended, err = s.tokens.RevokeUser(ctx, reset.ID, now); err != nil {
			return fmt.Errorf("revoke sessions: %w", err)
		}
		if err := s.webhooks.emit(ctx, domain.WebhookUserPasswordReset, reset.ID, nil); err != nil {
			return err
		}
		if err := s.webhooks.sessionsRevoked(ctx, reset.ID, string(domain.EndedByPasswordReset)); err != nil {
			return err
		}
		return s.mail.enqueue(ctx, passwordChangedNotice(reset, domain.RequestMetaFrom(ctx).Lang), false)
	})
	if err != nil {
		return tokenError(err)
	}
	s.sessionEnds.ended(ctx, ended...)
	// The lock-out is about guessing this password; a reset ends it. Not in
	// the transaction: the attempts are counted apart from the account.
	if err := s.throttle.forget(ctx, reset.Email); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "login lock-out not cleared after a reset", slog.String("error", err.Error()))
	}
	s.delivery.wake()
	s.events.note(ctx, domain.PasswordResetCompletedEvent(reset.ID))
	s.events.note(ctx, domain.SessionRevokedEvent(reset.ID, reset.ID, domain.EndedByPasswordReset, ""))
	s.log.LogAttrs(ctx, slog.LevelInfo, "password reset", slog.String("user_id", reset.ID.String()))
	return nil
}

// VerificationAddress is the address that the verification link's token
// would verify, for the page the link opens to show: the token is looked
// at, not used (a mail scanner's GET of the link changes nothing). Any
// token that could not serve is domain.ErrInvalidLinkToken. Nothing else
// of the account is told: the page is open to whoever holds the link.
func (s *MailService) VerificationAddress(ctx context.Context, token string) (domain.Email, error) {
	if !domain.WellFormedLinkToken(token) {
		return "", domain.ErrInvalidLinkToken
	}
	t, _, err := s.peek(ctx, domain.HashLinkToken(token), domain.LinkVerifyEmail, s.clock.Now())
	if err != nil {
		return "", err
	}
	return t.Email, nil
}

// peek finds the token of purpose with hash and its account without using
// the token: domain.ErrInvalidLinkToken unless both could serve.
func (s *MailService) peek(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, domain.User, error) {
	t, err := s.links.Peek(ctx, hash, purpose, now)
	if err != nil {
		return domain.LinkToken{}, domain.User{}, tokenError(err)
	}
	u, err := s.users.ByID(ctx, t.UserID)
	if err != nil {
		return domain.LinkToken{}, domain.User{}, tokenError(err)
	}
	if !t.Usable(u, now) {
		return domain.LinkToken{}, domain.User{}, domain.ErrInvalidLinkToken
	}
	return t, u, nil
}

// tokenError answers a token whose account is gone like any bad token.
func tokenError(err error) error {
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.ErrInvalidLinkToken
	}
	return err
}

// wantsLink says whether u may be sent a link of purpose at all: a
// verification link while its email is not verified, a reset or sign-in
// link while it is enabled.
func wantsLink(u domain.User, purpose domain.LinkPurpose) bool {
	if purpose == domain.LinkResetPassword || purpose == domain.LinkEmailSignIn {
		return !u.Disabled
	}
	return !u.EmailVerified
}
