package application

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuthServiceConfig holds the token lifetimes of the contract.
type AuthServiceConfig struct {
	// RefreshTTL is the lifetime of one refresh token.
	RefreshTTL time.Duration
	// RefreshFamilyTTL is the absolute lifetime of a login session.
	RefreshFamilyTTL time.Duration
	// RefreshReuseGrace is how long a used refresh token may be presented
	// again for the same successor; 0 turns the grace off.
	RefreshReuseGrace time.Duration
}

// AuthService implements login, refresh, logout and bearer authentication.
type AuthService struct {
	users    ports.UserRepository
	tokens   ports.RefreshTokenStore
	throttle passwordThrottle
	hasher   ports.PasswordHasher
	issuer   ports.TokenIssuer
	clock    ports.Clock
	cfg      AuthServiceConfig
	log      *slog.Logger
	events   *Events

	// refreshKey derives a used token's successor, so that a repeat within
	// the grace window gets the same successor without the store holding
	// anything from which a live token could be recovered.
	refreshKey []byte

	dummyOnce sync.Once
	dummyHash string
	dummyErr  error
}

// AuthDeps are the ports the AuthService drives.
type AuthDeps struct {
	Users    ports.UserRepository
	Tokens   ports.RefreshTokenStore
	Attempts ports.LoginAttemptStore
	Keys     ports.KeyStore
	Hasher   ports.PasswordHasher
	Issuer   ports.TokenIssuer
	Clock    ports.Clock
	// Events, when set, receives the security events of login, refresh and
	// logout.
	Events *Events
}

// NewAuthService returns an AuthService. It loads the refresh-token HMAC key
// from the key store, creating it on first start; every node sharing the
// store uses the oldest such key, so they all derive the same successors.
func NewAuthService(ctx context.Context, deps AuthDeps, cfg AuthServiceConfig, log *slog.Logger) (*AuthService, error) {
	key, err := ensureRefreshKey(ctx, deps.Keys, deps.Clock)
	if err != nil {
		return nil, fmt.Errorf("refresh token key: %w", err)
	}
	return &AuthService{
		users: deps.Users, tokens: deps.Tokens, hasher: deps.Hasher,
		throttle: passwordThrottle{attempts: deps.Attempts, clock: deps.Clock, log: log},
		issuer:   deps.Issuer, clock: deps.Clock, cfg: cfg, log: log, refreshKey: key, events: deps.Events,
	}, nil
}

// refreshKeyID is the id of the refresh-token HMAC key. It is fixed, so that
// nodes starting together on an empty database race to insert the same
// row: one wins, the others get domain.ErrKeyExists, and all read back the
// one key. Two keys would make nodes derive different successors.
const refreshKeyID = "refresh-hmac-1"

func ensureRefreshKey(ctx context.Context, keys ports.KeyStore, clock ports.Clock) ([]byte, error) {
	existing, err := keys.Keys(ctx, domain.KeyPurposeRefreshHMAC)
	if err != nil {
		return nil, err
	}
	if len(existing) == 0 {
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		k := domain.SigningKey{ID: refreshKeyID, Purpose: domain.KeyPurposeRefreshHMAC,
			Algorithm: "HS256", Secret: secret, CreatedAt: clock.Now()}
		if err := keys.AddKey(ctx, k); err != nil && !errors.Is(err, domain.ErrKeyExists) {
			return nil, err
		}
		if existing, err = keys.Keys(ctx, domain.KeyPurposeRefreshHMAC); err != nil {
			return nil, err
		}
	}
	for _, k := range existing {
		if k.ID == refreshKeyID && len(k.Secret) >= 32 {
			return k.Secret, nil
		}
	}
	return nil, errors.New("no usable refresh token key")
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

// Login checks an email and password and opens a session. Unknown email and
// wrong password answer alike, in body and in timing; an email that failed
// too often is refused without checking the password.
func (s *AuthService) Login(ctx context.Context, in LoginInput) (TokenPair, error) {
	var verr domain.ValidationError
	if in.Email == "" {
		verr.Add("email", "must not be empty")
	}
	if in.Password == "" {
		verr.Add("password", "must not be empty")
	}
	if err := verr.Err(); err != nil {
		return TokenPair{}, err
	}
	now := s.clock.Now()
	email, msg := domain.ParseEmail(in.Email)
	if msg != "" {
		// No user can have this address, so there is nothing to count: not
		// storing a record keeps made-up strings out of the attempts table.
		// The dummy verification keeps the answer's timing uniform.
		if err := s.verifyDummy(ctx, in.Password); err != nil {
			return TokenPair{}, err
		}
		// Not even this string is kept in the audit trail.
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginFailed,
			Detail: detail("via", "login", "reason", "malformed_email")})
		return TokenPair{}, domain.ErrInvalidCredentials
	}
	failures, err := s.throttle.admit(ctx, email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.loginThrottled(ctx, email, tooMany.RetryAfter)
		}
		return TokenPair{}, err
	}

	user, err := s.users.ByEmail(ctx, email)
	if errors.Is(err, domain.ErrUserNotFound) {
		// Spend the same work as a real check, so timing does not tell
		// whether the email is registered.
		if err := s.verifyDummy(ctx, in.Password); err != nil {
			return TokenPair{}, err
		}
		return TokenPair{}, s.loginFailed(ctx, email, "", "unknown_email")
	}
	if err != nil {
		return TokenPair{}, fmt.Errorf("user by email: %w", err)
	}
	ok, rehash, err := s.hasher.Verify(ctx, user.PasswordHash, in.Password)
	if err != nil {
		return TokenPair{}, fmt.Errorf("verify password: %w", err)
	}
	if !ok {
		return TokenPair{}, s.loginFailed(ctx, email, user.ID, "wrong_password")
	}
	if err := s.throttle.succeeded(ctx, email, failures); err != nil {
		return TokenPair{}, err
	}
	if rehash {
		user = s.rehash(ctx, user, in.Password)
	}
	pair, err := s.openSession(ctx, user, now)
	if err != nil {
		return TokenPair{}, err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "login succeeded", slog.String("user_id", user.ID.String()))
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginSucceeded, ActorID: user.ID, SubjectID: user.ID,
		Detail: detail("via", "login")})
	return pair, nil
}

// loginFailed counts the failure against the email and records it. The
// audit trail names the account when there is one, and for an email that
// nobody has keeps neither the address nor anything derived from it: a
// typed-in address is personal data of someone who may never have
// registered, and may even be a password typed into the wrong field.
func (s *AuthService) loginFailed(ctx context.Context, email domain.Email, subject domain.UserID, reason string) error {
	err := s.throttle.failed(ctx, email)
	if errors.Is(err, domain.ErrInvalidCredentials) {
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginFailed, SubjectID: subject,
			Detail: detail("via", "login", "reason", reason)})
	}
	return err
}

// loginThrottled records a login refused by the lock-out. The lookup that
// names the account costs an indexed read, made for registered and unknown
// emails alike.
func (s *AuthService) loginThrottled(ctx context.Context, email domain.Email, wait time.Duration) {
	if s.events == nil {
		return
	}
	var subject domain.UserID
	reason := "unknown_email"
	if u, err := s.users.ByEmail(ctx, email); err == nil {
		subject, reason = u.ID, ""
	}
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginThrottled, SubjectID: subject,
		Detail: detail("via", "login", "reason", reason, "retry_after", retryAfterWord(wait))})
}

// verifyDummy checks password against a hash of a random password made
// once with the configured parameters: the cost of a real verification,
// for logins that have no real hash to check.
func (s *AuthService) verifyDummy(ctx context.Context, password string) error {
	s.dummyOnce.Do(func() {
		pw := make([]byte, 24)
		_, _ = rand.Read(pw)
		s.dummyHash, s.dummyErr = s.hasher.Hash(context.Background(), hex.EncodeToString(pw))
	})
	if s.dummyErr != nil {
		return fmt.Errorf("dummy hash: %w", s.dummyErr)
	}
	// Only a busy hasher or a request that gave up is worth reporting: the
	// answer is a failure anyway, but an overloaded service must say 503,
	// as it would for a real account.
	_, _, err := s.hasher.Verify(ctx, s.dummyHash, password)
	if errors.Is(err, domain.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
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

// openSession starts a refresh-token family for the user and returns the
// first token pair.
func (s *AuthService) openSession(ctx context.Context, user domain.User, now time.Time) (TokenPair, error) {
	token := newRefreshToken()
	family := domain.RefreshFamily{
		ID:        newFamilyID(),
		UserID:    user.ID,
		CreatedAt: now,
		ExpiresAt: now.Add(s.cfg.RefreshFamilyTTL),
	}
	rec := domain.RefreshToken{
		Hash:      hashRefreshToken(token),
		FamilyID:  family.ID,
		UserID:    user.ID,
		IssuedAt:  now,
		ExpiresAt: minTime(now.Add(s.cfg.RefreshTTL), family.ExpiresAt),
	}
	if err := s.tokens.CreateFamily(ctx, family, rec); err != nil {
		return TokenPair{}, fmt.Errorf("create session: %w", err)
	}
	return s.pair(ctx, user, token, rec.ExpiresAt)
}

func (s *AuthService) pair(ctx context.Context, user domain.User, refresh string, refreshExpires time.Time) (TokenPair, error) {
	access, err := s.issuer.Issue(ctx, user)
	if err != nil {
		return TokenPair{}, fmt.Errorf("issue access token: %w", err)
	}
	return TokenPair{Access: access, RefreshToken: refresh, RefreshExpiresAt: refreshExpires, User: user}, nil
}

// Refresh exchanges a refresh token for a new pair, rotating it. A repeat of
// the same token within the grace window gets the same successor; any other
// reuse revokes the whole family (RFC 9700 reuse detection).
func (s *AuthService) Refresh(ctx context.Context, token string) (_ TokenPair, err error) {
	outcome := ports.RefreshSucceeded
	defer func() { s.events.refreshed(refreshOutcome(outcome, err)) }()
	if !validRefreshToken(token) {
		return TokenPair{}, domain.ErrRefreshTokenInvalid
	}
	hash := hashRefreshToken(token)
	rec, family, err := s.tokens.Lookup(ctx, hash)
	if err != nil {
		return TokenPair{}, err
	}
	now := s.clock.Now()
	if !family.Active(now) || !now.Before(rec.ExpiresAt) {
		return TokenPair{}, domain.ErrRefreshTokenInvalid
	}
	successor := s.successorOf(token)
	successorHash := hashRefreshToken(successor)
	if rec.UsedAt == nil {
		next := domain.RefreshToken{
			Hash:      successorHash,
			FamilyID:  family.ID,
			UserID:    family.UserID,
			IssuedAt:  now,
			ExpiresAt: minTime(now.Add(s.cfg.RefreshTTL), family.ExpiresAt),
		}
		consumed, err := s.tokens.Rotate(ctx, hash, now, next)
		if errors.Is(err, domain.ErrRefreshFamilyRevoked) {
			return TokenPair{}, domain.ErrRefreshTokenInvalid
		}
		if err != nil {
			return TokenPair{}, fmt.Errorf("rotate refresh token: %w", err)
		}
		if consumed {
			return s.refreshedPair(ctx, family, successor, next.ExpiresAt)
		}
		// A concurrent request consumed it first: judge it as a repeat.
		if rec, family, err = s.tokens.Lookup(ctx, hash); err != nil {
			return TokenPair{}, err
		}
	}
	// A used token: success from here on is a repeat within the grace window.
	outcome = ports.RefreshGraceRepeat
	return s.repeat(ctx, rec, family, successor, successorHash, now)
}

// repeat answers a refresh token that was used already: within the grace
// window, and while its successor is unused, with that same successor;
// otherwise by revoking the family.
func (s *AuthService) repeat(ctx context.Context, rec domain.RefreshToken, family domain.RefreshFamily,
	successor, successorHash string, now time.Time) (TokenPair, error) {
	if s.cfg.RefreshReuseGrace > 0 && rec.UsedAt != nil && family.Active(now) &&
		now.Sub(*rec.UsedAt) <= s.cfg.RefreshReuseGrace &&
		hmac.Equal([]byte(rec.SuccessorHash), []byte(successorHash)) {
		next, nextFamily, err := s.tokens.Lookup(ctx, successorHash)
		if err != nil && !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			return TokenPair{}, err
		}
		if err == nil && next.UsedAt == nil && nextFamily.Active(now) {
			return s.refreshedPair(ctx, nextFamily, successor, next.ExpiresAt)
		}
	}
	if err := s.tokens.RevokeFamily(ctx, family.ID, now); err != nil {
		return TokenPair{}, fmt.Errorf("revoke family: %w", err)
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "refresh token reuse detected; session revoked",
		slog.String("user_id", family.UserID.String()), slog.String("family_id", family.ID))
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditRefreshReuseDetected, SubjectID: family.UserID,
		Detail: detail("family", family.ID)})
	if family.RevokedAt == nil {
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditSessionRevoked, SubjectID: family.UserID,
			Detail: detail("reason", "reuse", "family", family.ID)})
	}
	return TokenPair{}, domain.ErrRefreshTokenReused
}

func (s *AuthService) refreshedPair(ctx context.Context, family domain.RefreshFamily, refresh string, expires time.Time) (TokenPair, error) {
	user, err := s.users.ByID(ctx, family.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return TokenPair{}, domain.ErrRefreshTokenInvalid
	}
	if err != nil {
		return TokenPair{}, err
	}
	return s.pair(ctx, user, refresh, expires)
}

// Logout ends the session of the refresh token. An unknown or malformed
// token is not an error: the caller's goal, no live session, holds.
func (s *AuthService) Logout(ctx context.Context, token string) error {
	if !validRefreshToken(token) {
		return nil
	}
	_, family, err := s.tokens.Lookup(ctx, hashRefreshToken(token))
	if errors.Is(err, domain.ErrRefreshTokenInvalid) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.tokens.RevokeFamily(ctx, family.ID, s.clock.Now()); err != nil {
		return fmt.Errorf("revoke family: %w", err)
	}
	if family.RevokedAt == nil {
		// Whoever holds the refresh token acts as its user.
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditSessionRevoked, ActorID: family.UserID,
			SubjectID: family.UserID, Detail: detail("reason", "logout", "family", family.ID)})
	}
	return nil
}

// Authenticate verifies a bearer access token and returns its principal, or
// domain.ErrInvalidToken.
func (s *AuthService) Authenticate(ctx context.Context, bearer string) (*domain.Principal, error) {
	p, err := s.issuer.Verify(ctx, bearer)
	if err != nil {
		return nil, domain.ErrInvalidToken
	}
	return &p, nil
}

// successorOf derives the token that replaces token when it is rotated:
// HMAC-SHA256 under the server key, shaped as a version 4 UUID.
func (s *AuthService) successorOf(token string) string {
	mac := hmac.New(sha256.New, s.refreshKey)
	mac.Write([]byte(token))
	var b [16]byte
	copy(b[:], mac.Sum(nil))
	return formatUUIDv4(b)
}

func newRefreshToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return formatUUIDv4(b)
}

func newFamilyID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// formatUUIDv4 sets the version and variant bits and formats b as
// 8-4-4-4-12 lowercase hex.
func formatUUIDv4(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// validRefreshToken accepts exactly the form we issue: a lowercase version 4
// UUID. Anything else is rejected before touching the store.
func validRefreshToken(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return s[14] == '4' && (s[19] == '8' || s[19] == '9' || s[19] == 'a' || s[19] == 'b')
}

// hashRefreshToken is what the store keeps instead of the token. The token
// carries 122 random bits, so a plain SHA-256 cannot be reversed by search.
func hashRefreshToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
