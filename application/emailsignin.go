package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// EmailSignInService signs people in by their email alone
// (contract-identity.md section 4): one message carries a 6-digit code
// and a link, either of which signs in once. It is the password reset's
// machinery with another purpose: the request is queued as it comes and
// answered by the sender (DeliveryService) within the account's mail
// budget, the token is a link token that also carries the code's hash,
// and a new request voids the earlier one.
type EmailSignInService struct {
	core
	emailSignInPorts
}

// emailSignInPorts are what the EmailSignInService uses.
type emailSignInPorts struct {
	users    ports.UserRepository
	links    ports.LinkTokenStore
	outbox   ports.Outbox
	tx       ports.Transactor
	signIn   *signInPath
	webhooks *webhookQueue
	delivery wakeup
	// enabled is Config.EmailSignIn; off, every method answers
	// domain.ErrEmailSignInOff.
	enabled bool
	// signUp makes an account of an email no account has at its first
	// right code or link (Config.EmailSignUp).
	signUp bool
}

// Enabled reports whether the deployment signs people in by email; a nil
// service (an adapter built over a partial set of services) does not.
func (s *EmailSignInService) Enabled() bool { return s != nil && s.enabled }

// RequestCode asks for a sign-in code and link for email. The answer is
// the same whether or not an account has the email, and takes the same
// time: the request is queued as it is, as a reset request is, and the
// sender mails a code only to an existing, enabled account within its
// mail budget (shared with the reset and verification requests). A
// malformed email is a *domain.ValidationError.
func (s *EmailSignInService) RequestCode(ctx context.Context, email string) error {
	if !s.enabled {
		return domain.ErrEmailSignInOff
	}
	return queueMailRequest(ctx, s.core, s.outbox, s.delivery, domain.LinkEmailSignIn, email)
}

// VerifyCode signs in with the code mailed to email: a session, or the
// second step for an account with a second factor
// (signInPath.complete), with amr ["otp"], and the email verified. A
// wrong, malformed, used, expired or voided code, and an email no account
// has, are all domain.ErrInvalidEmailCode; a missing email or code is a
// *domain.ValidationError. A code checked against an
// email counts under its lock-out as a password does: a wrong one is a
// failure (the fifth also voids the code), and a locked email is a
// *domain.TooManyAttemptsError without a look at the code.
func (s *EmailSignInService) VerifyCode(ctx context.Context, rawEmail, code string) (SignInResult, error) {
	if !s.enabled {
		return SignInResult{}, domain.ErrEmailSignInOff
	}
	var verr domain.ValidationError
	if rawEmail == "" {
		verr.Add(domain.FieldEmail, "must not be empty")
	}
	if code == "" {
		verr.Add(FieldCode, "must not be empty")
	}
	if err := verr.Err(); err != nil {
		return SignInResult{}, err
	}
	email, msg := domain.ParseEmail(rawEmail)
	if msg != "" || !domain.WellFormedEmailCode(code) {
		// Nothing that could be any account's code: nothing to count.
		return SignInResult{}, domain.ErrInvalidEmailCode
	}
	rec, err := s.throttle.reserve(ctx, email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.events.note(ctx, domain.LoginThrottledEvent("", "", domain.CheckEmailCode, "", tooMany.RetryAfter))
		}
		return SignInResult{}, err
	}
	user, err := s.users.ByEmail(ctx, email)
	if errors.Is(err, domain.ErrUserNotFound) && !s.signUp {
		_ = s.throttle.failed(ctx, rec)
		s.events.note(ctx, domain.LoginFailedEvent("", "", domain.CheckEmailCode, domain.FailureUnknownEmail))
		return SignInResult{}, domain.ErrInvalidEmailCode
	}
	if err != nil && !errors.Is(err, domain.ErrUserNotFound) {
		return SignInResult{}, s.throttle.unchecked(ctx, email, fmt.Errorf("user by email: %w", err))
	}
	var (
		wrong   bool
		created bool
	)
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		wrong = false
		t, err := s.links.UseCode(ctx, email, domain.HashEmailCode(email, code), s.clock.Now())
		if errors.Is(err, domain.ErrInvalidLinkToken) {
			// Committed, not rolled back: the wrong code is counted
			// against the token.
			wrong = true
			return nil
		}
		if err != nil {
			return err
		}
		user, created, err = s.accountFor(ctx, t)
		return err
	})
	switch {
	case wrong:
		_ = s.throttle.failed(ctx, rec)
		s.events.note(ctx, domain.LoginFailedEvent("", user.ID, domain.CheckEmailCode, domain.FailureWrongCode))
		return SignInResult{}, domain.ErrInvalidEmailCode
	case errors.Is(err, domain.ErrInvalidLinkToken), errors.Is(err, domain.ErrUserNotFound):
		return SignInResult{}, s.throttle.unchecked(ctx, email, domain.ErrInvalidEmailCode)
	case err != nil:
		return SignInResult{}, s.throttle.unchecked(ctx, email, err)
	}
	s.accepted(ctx, user, created)
	s.log.LogAttrs(ctx, slog.LevelInfo, "email code accepted", slog.String("user_id", user.ID.String()))
	return s.signIn.complete(ctx, authenticated{user: user, amr: domain.AMREmailCode, counted: email})
}

// VerifyLink signs in with the token of the link mailed with a code,
// as VerifyCode does. The token holds 256 random bits: it is not counted
// under the lock-out. Any token that cannot serve is
// domain.ErrInvalidEmailCode.
func (s *EmailSignInService) VerifyLink(ctx context.Context, token string) (SignInResult, error) {
	if !s.enabled {
		return SignInResult{}, domain.ErrEmailSignInOff
	}
	if !domain.WellFormedLinkToken(token) {
		return SignInResult{}, domain.ErrInvalidEmailCode
	}
	var (
		user    domain.User
		created bool
	)
	err := s.tx.WithinTx(ctx, func(ctx context.Context) error {
		t, err := s.links.Use(ctx, domain.HashLinkToken(token), domain.LinkEmailSignIn, s.clock.Now())
		if err != nil {
			return err
		}
		user, created, err = s.accountFor(ctx, t)
		return err
	})
	if errors.Is(err, domain.ErrInvalidLinkToken) || errors.Is(err, domain.ErrUserNotFound) {
		return SignInResult{}, domain.ErrInvalidEmailCode
	}
	if err != nil {
		return SignInResult{}, err
	}
	s.accepted(ctx, user, created)
	s.log.LogAttrs(ctx, slog.LevelInfo, "magic link accepted", slog.String("user_id", user.ID.String()))
	return s.signIn.complete(ctx, authenticated{user: user, amr: domain.AMREmailCode})
}

// accountFor is the account that the used token t signs in, its email
// verified, in ctx's transaction: the token's account, or, for a
// sign-up's token (no user), the account that has its email now (someone
// registered it since: the code proved the address) or else a new one
// (created true). A sign-up's token after USERD_EMAIL_SIGNUP was turned
// off makes no account: domain.ErrInvalidLinkToken.
func (s *EmailSignInService) accountFor(ctx context.Context, t domain.LinkToken) (domain.User, bool, error) {
	if t.UserID != "" {
		u, err := s.verified(ctx, t)
		return u, false, err
	}
	u, err := s.users.ByEmail(ctx, t.Email)
	switch {
	case err == nil:
		t.UserID = u.ID
		u, err = s.verified(ctx, t)
		return u, false, err
	case !errors.Is(err, domain.ErrUserNotFound):
		return domain.User{}, false, err
	case !s.signUp:
		return domain.User{}, false, domain.ErrInvalidLinkToken
	}
	u, err = s.signUpAccount(ctx, t.Email)
	return u, err == nil, err
}

// signUpAccount creates the account of an email whose sign-up code or
// link was right: no password, the email verified, a customer named by
// the email's local part; user.created goes with it.
func (s *EmailSignInService) signUpAccount(ctx context.Context, email domain.Email) (domain.User, error) {
	name, _, _ := strings.Cut(string(email), "@")
	if _, msg := domain.ParseName(name); msg != "" {
		name = "New user"
	}
	if r := []rune(name); len(r) > domain.NameMaxLen {
		name = string(r[:domain.NameMaxLen])
	}
	nu, verr := domain.ValidateNewUser(name, string(email), domain.Profiles{domain.ProfileCustomer})
	if err := verr.Err(); err != nil {
		return domain.User{}, err
	}
	u := nu.User("", s.clock.Now())
	u.EmailVerified = true
	if err := s.users.Create(ctx, u); err != nil {
		return domain.User{}, err
	}
	return u, s.webhooks.emit(ctx, domain.WebhookUserCreated, u.ID, map[string]any{"profiles": u.Profiles.Strings()})
}

// accepted records an account that a sign-up's code or link created.
func (s *EmailSignInService) accepted(ctx context.Context, u domain.User, created bool) {
	if created {
		s.events.note(ctx, domain.UserCreatedEvent("", u.ID, u.Profiles, domain.OriginEmailSignUp))
		s.log.LogAttrs(ctx, slog.LevelInfo, "user created", slog.String("user_id", u.ID.String()), slog.String("origin", "email_sign_up"))
	}
}

// verified marks the email of the used token t's account verified (the
// code or link proved control of it), in ctx's transaction, and returns
// the account. A token sent to an address the account no longer has is
// domain.ErrInvalidLinkToken.
func (s *EmailSignInService) verified(ctx context.Context, t domain.LinkToken) (domain.User, error) {
	var wasVerified bool
	u, err := s.users.Update(ctx, t.UserID, func(u *domain.User) error {
		if !t.BelongsTo(*u) {
			return domain.ErrInvalidLinkToken
		}
		wasVerified = u.EmailVerified
		if !wasVerified {
			u.EmailVerified, u.UpdatedAt = true, s.clock.Now()
		}
		return nil
	})
	if err != nil || wasVerified {
		return u, err
	}
	return u, s.webhooks.emit(ctx, domain.WebhookUserEmailVerified, u.ID, nil)
}
