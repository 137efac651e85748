package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/userd/userd/domain"
)

// MailService serves the links userd sends by mail: a request for a
// verification or reset link, an admin's sending of a reset link, and the
// use of one.
type MailService struct{ *base }

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
	id, err := s.adminOnUser(ctx, actor, rawUserID)
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
		_, err = s.replaceLink(ctx, u, domain.LinkResetPassword, false, domain.RequestMetaFrom(ctx).Lang, time.Time{})
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

// queueRequest checks the form of the email (a malformed one cannot be an
// account's: saying so tells nothing) and queues the request.
func (s *MailService) queueRequest(ctx context.Context, purpose domain.LinkPurpose, raw string) error {
	email, msg := domain.ParseEmail(raw)
	if msg != "" {
		verr := &domain.ValidationError{}
		verr.Add(domain.FieldEmail, msg)
		return verr
	}
	now := s.clock.Now()
	payload, err := json.Marshal(domain.MailRequest{Purpose: purpose, Email: email,
		Lang: domain.RequestMetaFrom(ctx).Lang, At: now})
	if err != nil {
		return fmt.Errorf("queue mail request: %w", err)
	}
	m := domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMailRequest,
		Payload: payload, CreatedAt: now, NextAttemptAt: now}
	if err := s.outbox.Enqueue(ctx, m); err != nil {
		return fmt.Errorf("queue mail request: %w", err)
	}
	s.delivery.wake()
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
		return s.emit(ctx, domain.WebhookUserEmailVerified, verified.ID, nil)
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
		if err := s.emit(ctx, domain.WebhookUserPasswordReset, reset.ID, nil); err != nil {
			return err
		}
		if err := s.emitSessionsRevoked(ctx, reset.ID, string(domain.EndedByPasswordReset)); err != nil {
			return err
		}
		return s.enqueueMail(ctx, passwordChangedNotice(reset, domain.RequestMetaFrom(ctx).Lang), false)
	})
	if err != nil {
		return tokenError(err)
	}
	s.sessionsEnded(ctx, ended...)
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
// verification link while its email is not verified, a reset link while
// it is enabled.
func wantsLink(u domain.User, purpose domain.LinkPurpose) bool {
	if purpose == domain.LinkResetPassword {
		return !u.Disabled
	}
	return !u.EmailVerified
}

// replaceLink is queueLink for a link sent on demand (an anonymous
// request, or an admin's): a new reset link first voids the account's
// earlier ones, so that only the newest works. requested is as for
// sendLink.
func (b *base) replaceLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string, due time.Time) (domain.OutboxMessage, error) {
	if purpose == domain.LinkResetPassword {
		if err := b.links.Void(ctx, u.ID, domain.LinkResetPassword, b.clock.Now()); err != nil {
			return domain.OutboxMessage{}, fmt.Errorf("void reset links: %w", err)
		}
	}
	return b.queueLink(ctx, u, purpose, requested, lang, due)
}

// sendLink issues a link token of purpose for u and queues the message that
// carries it, in ctx's transaction. requested says whether someone asked
// for it (it then counts against the account's mail budget).
func (b *base) sendLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string) error {
	_, err := b.queueLink(ctx, u, purpose, requested, lang, time.Time{})
	return err
}

// queueLink is sendLink for a caller that may send the message itself:
// the message is due at due (zero: now), and returned.
func (b *base) queueLink(ctx context.Context, u domain.User, purpose domain.LinkPurpose, requested bool, lang string, due time.Time) (domain.OutboxMessage, error) {
	now := b.clock.Now()
	ttl, base, template := b.cfg.VerifyEmailTTL, b.cfg.VerifyEmailURL, domain.MailVerifyEmail
	if purpose == domain.LinkResetPassword {
		ttl, base, template = b.cfg.ResetPasswordTTL, b.cfg.ResetPasswordURL, domain.MailResetPassword
	}
	token, hash := domain.NewLinkToken()
	t := domain.LinkToken{Hash: hash, Purpose: purpose, UserID: u.ID, Email: u.Email,
		CreatedAt: now, ExpiresAt: now.Add(ttl), Requested: requested}
	if err := b.links.Issue(ctx, t); err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("issue link token: %w", err)
	}
	return b.queueMail(ctx, domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: template, Lang: lang,
		Data: map[string]string{"link": linkURL(base, token)}}, true, due)
}

// passwordChangedNotice is the notice mailed to u after its password
// changed, by its user, an admin or a reset.
func passwordChangedNotice(u domain.User, lang string) domain.Mail {
	return domain.Mail{To: u.Email, User: u.ID, Name: u.Addressee(), Template: domain.MailPasswordChanged, Lang: lang}
}

// checkMailBudget refuses with a *domain.MailBudgetError when the mail
// budget of the account id allows no more messages at now.
func (b *base) checkMailBudget(ctx context.Context, id domain.UserID, now time.Time) error {
	count, last, err := b.links.Requested(ctx, id, now.Add(-domain.MailBudgetWindow))
	if err != nil {
		return fmt.Errorf("mail budget: %w", err)
	}
	if !b.cfg.MailBudget.Allows(now, count, last) {
		return &domain.MailBudgetError{RetryAfter: b.cfg.MailBudget.RetryAfter(now, count, last)}
	}
	return nil
}

// enqueueMail queues m in ctx's transaction; secret marks a message whose
// data holds a live token (sealed at rest, deleted once sent).
func (b *base) enqueueMail(ctx context.Context, m domain.Mail, secret bool) error {
	_, err := b.queueMail(ctx, m, secret, time.Time{})
	return err
}

// queueMail is enqueueMail with the time the message is first due (zero:
// now); it returns the message.
func (b *base) queueMail(ctx context.Context, m domain.Mail, secret bool, due time.Time) (domain.OutboxMessage, error) {
	payload, err := json.Marshal(m)
	if err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("queue mail: %w", err)
	}
	now := b.clock.Now()
	if due.IsZero() {
		due = now
	}
	msg := domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMail, Payload: payload,
		Secret: secret, CreatedAt: now, NextAttemptAt: due}
	if err := b.outbox.Enqueue(ctx, msg); err != nil {
		return domain.OutboxMessage{}, fmt.Errorf("queue mail: %w", err)
	}
	return msg, nil
}

// linkURL appends the token to a link's base URL as the query parameter
// "token", keeping a query the base already has.
func linkURL(base, token string) string {
	u, err := url.Parse(base)
	if err != nil {
		// The configuration checked the URL; keep the message usable anyway.
		return base + "?token=" + url.QueryEscape(token)
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String()
}
