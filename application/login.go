package application

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuthService implements the password sign-in and its second step,
// refresh, logout, bearer authentication and an admin's unlock.
type AuthService struct {
	core
	authPorts

	// dummyHash is the hash verifyDummy checks against, made on first
	// use; dummyMu serialises its making.
	dummyHash atomic.Pointer[string]
	dummyMu   sync.Mutex
}

// authPorts are what the AuthService uses.
type authPorts struct {
	users  ports.UserRepository
	tokens ports.RefreshTokenStore
	codec  ports.RefreshTokenCodec
	issuer ports.TokenIssuer
	hasher ports.PasswordHasher
	mfa    ports.MFAStore
	tx     ports.Transactor
	// signIn ends every sign-in; factors spend the second step's codes.
	signIn   *signInPath
	factors  *secondFactors
	webhooks *webhookQueue
	// sessionEnds refuses the access tokens of ended sessions.
	sessionEnds *sessionEnds
	// refresh rotates refresh tokens, as the provider's refresh does.
	refresh *refreshRotation
	// hook asks the claims hook again at each refresh.
	hook *claimsHook
	// personalTokens finds the caller of a personal access token.
	personalTokens *PersonalTokenService
}

// TokenPair is what login and refresh answer.
type TokenPair struct {
	Access           domain.AccessToken
	RefreshToken     string
	RefreshExpiresAt time.Time
	User             domain.User
}

// LoginInput is a login request.
type LoginInput struct {
	Email    string
	Password string
}

// Login checks an email and password and, the password right, ends the
// sign-in (signInPath.complete): a session, or the second step for an
// account with a second factor. Unknown email and wrong password answer
// alike, in body and in timing; an email that failed too often is refused
// without checking the password.
func (s *AuthService) Login(ctx context.Context, in LoginInput) (SignInResult, error) {
	var verr domain.ValidationError
	if in.Email == "" {
		verr.Add(domain.FieldEmail, "must not be empty")
	}
	if in.Password == "" {
		verr.Add(domain.FieldPassword, "must not be empty")
	}
	if err := verr.Err(); err != nil {
		return SignInResult{}, err
	}
	now := s.clock.Now()
	email, msg := domain.ParseEmail(in.Email)
	if msg != "" {
		// No user can have this address, so there is nothing to count: not
		// storing a record keeps made-up strings out of the attempts table.
		// The dummy verification keeps the answer's timing uniform.
		if err := s.verifyDummy(ctx, in.Password); err != nil {
			return SignInResult{}, err
		}
		// Not even this string is kept in the audit trail.
		s.events.note(ctx, domain.LoginFailedEvent("", "", domain.CheckLogin, domain.FailureMalformedEmail))
		return SignInResult{}, domain.ErrInvalidCredentials
	}
	rec, err := s.throttle.reserve(ctx, email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.loginThrottled(ctx, email, tooMany.RetryAfter)
		}
		return SignInResult{}, err
	}

	user, err := s.users.ByEmail(ctx, email)
	if errors.Is(err, domain.ErrUserNotFound) {
		// Spend the same work as a real check, so timing does not tell
		// whether the email is registered.
		if err := s.verifyDummy(ctx, in.Password); err != nil {
			return SignInResult{}, s.throttle.unchecked(ctx, email, err)
		}
		return SignInResult{}, s.loginFailed(ctx, rec, "", domain.FailureUnknownEmail)
	}
	if err != nil {
		return SignInResult{}, s.throttle.unchecked(ctx, email, fmt.Errorf("user by email: %w", err))
	}
	if !user.HasPassword() {
		// An account made by a sign-in through another provider: no
		// password is right, and finding that out costs what a check does.
		if err := s.verifyDummy(ctx, in.Password); err != nil {
			return SignInResult{}, s.throttle.unchecked(ctx, email, err)
		}
		return SignInResult{}, s.loginFailed(ctx, rec, user.ID, domain.FailureWrongPassword)
	}
	ok, rehash, err := s.hasher.Verify(ctx, user.PasswordHash, in.Password)
	if err != nil {
		return SignInResult{}, s.throttle.unchecked(ctx, email, fmt.Errorf("verify password: %w", err))
	}
	if !ok {
		return SignInResult{}, s.loginFailed(ctx, rec, user.ID, domain.FailureWrongPassword)
	}
	a := authenticated{user: user, amr: domain.AMRPassword, at: now, counted: email}
	if rehash {
		a.accepted = func(ctx context.Context, u domain.User) domain.User { return s.rehash(ctx, u, in.Password) }
	}
	return s.signIn.complete(ctx, a)
}

// loginFailed reports a failure, counted against the email when the
// check was reserved, and records it. The audit trail names the account when there is one, and for an email that
// nobody has keeps neither the address nor anything derived from it: a
// typed-in address is personal data of someone who may never have
// registered, and may even be a password typed into the wrong field.
func (s *AuthService) loginFailed(ctx context.Context, rec domain.LoginAttempts, subject domain.UserID, why domain.LoginFailure) error {
	err := s.throttle.failed(ctx, rec)
	s.events.note(ctx, domain.LoginFailedEvent("", subject, domain.CheckLogin, why))
	return err
}

// loginThrottled records a login refused by the lock-out. The lookup that
// names the account costs an indexed read, made for registered and unknown
// emails alike.
func (s *AuthService) loginThrottled(ctx context.Context, email domain.Email, wait time.Duration) {
	var subject domain.UserID
	why := domain.FailureUnknownEmail
	if u, err := s.users.ByEmail(ctx, email); err == nil {
		subject, why = u.ID, ""
	}
	s.events.note(ctx, domain.LoginThrottledEvent("", subject, domain.CheckLogin, why, wait))
}

// verifyDummy checks password against a hash of a random password made
// once with the configured parameters: the cost of a real verification,
// for logins that have no real hash to check.
func (s *AuthService) verifyDummy(ctx context.Context, password string) error {
	dummy, err := s.dummy(ctx)
	if err != nil {
		return fmt.Errorf("dummy hash: %w", err)
	}
	// Only a busy hasher or a request that gave up is worth reporting: the
	// answer is a failure anyway, but an overloaded service must say 503,
	// as it would for a real account.
	_, _, err = s.hasher.Verify(ctx, dummy, password)
	if errors.Is(err, domain.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// dummy returns the dummy hash, making it on first use. A failure to make
// it (a hasher busy with registrations, a request given up) is not kept:
// the next login tries again, rather than every later login for an
// unknown email failing fast, which would tell unknown emails apart.
func (s *AuthService) dummy(ctx context.Context) (string, error) {
	if h := s.dummyHash.Load(); h != nil {
		return *h, nil
	}
	s.dummyMu.Lock()
	defer s.dummyMu.Unlock()
	if h := s.dummyHash.Load(); h != nil {
		return *h, nil
	}
	pw := make([]byte, 24)
	_, _ = rand.Read(pw)
	h, err := s.hasher.Hash(ctx, hex.EncodeToString(pw))
	if err != nil {
		return "", err
	}
	s.dummyHash.Store(&h)
	return h, nil
}

// rehash replaces a hash made with other parameters (or bcrypt) by one with
// the configured parameters. Failure is logged and the login goes on: the
// old hash still verifies.
func (s *AuthService) rehash(ctx context.Context, user domain.User, password string) domain.User {
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "password rehash failed", slog.String("user_id", user.ID.String()))
		return user
	}
	old := user.PasswordHash
	updated, err := s.users.Update(ctx, user.ID, func(u *domain.User) error {
		if u.PasswordHash != old {
			return errRehashRaced
		}
		u.PasswordHash = hash
		return nil
	})
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "password rehash skipped", slog.String("user_id", user.ID.String()),
			slog.String("reason", err.Error()))
		return user
	}
	return updated
}

var errRehashRaced = errors.New("password changed during rehash")

// Authenticate verifies a bearer access token and returns its principal, or
// domain.ErrInvalidToken, also for a token whose session has ended (here,
// or on another node as the SessionEndings told). A personal access token
// (udp_…) is looked up in the store instead: its revocation, expiry and
// its user's disabling hold on every node at once.
func (s *AuthService) Authenticate(ctx context.Context, bearer string) (*domain.Principal, error) {
	if domain.IsPersonalToken(bearer) {
		return s.personalTokens.authenticate(ctx, bearer)
	}
	p, err := s.issuer.Verify(ctx, bearer)
	if err != nil || s.sessionEnds.has(p.Session.ID) {
		return nil, domain.ErrInvalidToken
	}
	return &p, nil
}
