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

// UserServiceConfig holds the switches that shape the user use cases.
type UserServiceConfig struct {
	// OpenRegistration lets anonymous callers create ROLE_CUSTOMER accounts.
	OpenRegistration bool
	// RequireCurrentPassword makes currentPassword mandatory when a non-admin
	// changes its own password or email.
	RequireCurrentPassword bool
}

// UserService implements the user-record use cases.
type UserService struct {
	users    ports.UserRepository
	tokens   ports.RefreshTokenStore
	throttle passwordThrottle
	hasher   ports.PasswordHasher
	clock    ports.Clock
	cfg      UserServiceConfig
	log      *slog.Logger
	events   *Events
}

// UserServiceOption adds an optional collaborator to a UserService.
type UserServiceOption func(*UserService)

// WithEvents makes the UserService report its security events (accounts
// created, updated, deleted; failed current-password checks; sessions
// ended) to events. Without it, none are recorded.
func WithEvents(events *Events) UserServiceOption {
	return func(s *UserService) { s.events = events }
}

// NewUserService returns a UserService over the given ports. attempts is
// the login lock-out store: a wrong currentPassword counts against it too.
func NewUserService(users ports.UserRepository, tokens ports.RefreshTokenStore, attempts ports.LoginAttemptStore,
	hasher ports.PasswordHasher, clock ports.Clock, cfg UserServiceConfig, log *slog.Logger, opts ...UserServiceOption) *UserService {
	s := &UserService{
		users: users, tokens: tokens, hasher: hasher, clock: clock, cfg: cfg, log: log,
		throttle: passwordThrottle{attempts: attempts, clock: clock, log: log},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// RegisterInput is a create request. Profiles nil means absent; Role is the
// legacy single-role field, nil when absent.
type RegisterInput struct {
	Name     string
	Email    string
	Password string
	Profiles []string
	Role     *string
}

// Register creates a user. Anyone may create a ROLE_CUSTOMER account while
// open registration is on; only an admin may create an admin, or anything
// when registration is closed.
func (s *UserService) Register(ctx context.Context, actor *domain.Principal, in RegisterInput) (domain.User, error) {
	if actor != nil {
		if _, err := s.confirmActor(ctx, actor); err != nil {
			return domain.User{}, err
		}
	}
	profiles, err := resolveProfiles(in.Profiles, in.Role)
	if err != nil {
		return domain.User{}, err
	}
	var verr domain.ValidationError
	name, msg := domain.ParseName(in.Name)
	if msg != "" {
		verr.Add("name", msg)
	}
	email, msg := domain.ParseEmail(in.Email)
	if msg != "" {
		verr.Add("email", msg)
	}
	if msg := domain.CheckPassword(s.hasher.Normalize(in.Password), email); msg != "" {
		verr.Add("password", msg)
	}
	if len(profiles) == 0 {
		verr.Add("profiles", "must hold at least one profile")
	}
	if err := verr.Err(); err != nil {
		return domain.User{}, err
	}

	if !actor.IsAdmin() {
		needsAdmin := profiles.Has(domain.ProfileAdmin) || !s.cfg.OpenRegistration
		if needsAdmin && actor == nil {
			return domain.User{}, domain.ErrUnauthenticated
		}
		if needsAdmin {
			return domain.User{}, domain.ErrForbidden
		}
	}
	u, err := s.create(ctx, name, email, in.Password, profiles)
	if err != nil {
		return domain.User{}, err
	}
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditUserCreated, ActorID: actorID(actor), SubjectID: u.ID,
		Detail: detail("profiles", strings.Join(u.Profiles.Strings(), ","))})
	return u, nil
}

// create hashes the password and stores a new user; the inputs are valid.
func (s *UserService) create(ctx context.Context, name string, email domain.Email, password string, profiles domain.Profiles) (domain.User, error) {
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return domain.User{}, fmt.Errorf("hash password: %w", err)
	}
	now := s.clock.Now()
	u := domain.User{
		ID:           domain.NewUserID(now),
		Name:         name,
		Email:        email,
		PasswordHash: hash,
		Profiles:     profiles,
		CreatedAt:    now,
		UpdatedAt:    now,
	}
	if err := s.users.Create(ctx, u); err != nil {
		return domain.User{}, fmt.Errorf("create user: %w", err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "user created", slog.String("user_id", u.ID.String()),
		slog.Any("profiles", u.Profiles.Strings()))
	return u, nil
}

// EnsureAdmin creates an admin with the given email unless a user has it
// already, in which case it reports created false and changes nothing. It
// serves `userd admin create` and the bootstrap admin of the configuration.
func (s *UserService) EnsureAdmin(ctx context.Context, name, email, password string) (domain.User, bool, error) {
	var verr domain.ValidationError
	n, msg := domain.ParseName(name)
	if msg != "" {
		verr.Add("name", msg)
	}
	e, msg := domain.ParseEmail(email)
	if msg != "" {
		verr.Add("email", msg)
	}
	if msg := domain.CheckPassword(s.hasher.Normalize(password), e); msg != "" {
		verr.Add("password", msg)
	}
	if err := verr.Err(); err != nil {
		return domain.User{}, false, err
	}
	if u, err := s.users.ByEmail(ctx, e); err == nil {
		return u, false, nil
	} else if !errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, false, err
	}
	u, err := s.create(ctx, n, e, password, domain.Profiles{domain.ProfileAdmin})
	if errors.Is(err, domain.ErrEmailTaken) {
		// Another node bootstrapped the same admin at the same moment.
		u, err = s.users.ByEmail(ctx, e)
		return u, false, err
	}
	if err != nil {
		return domain.User{}, false, err
	}
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditUserCreated, SubjectID: u.ID,
		Detail: detail("profiles", strings.Join(u.Profiles.Strings(), ","), "origin", "operator")})
	return u, true, nil
}

// resolveProfiles turns the profiles and legacy role fields into one set:
// both present is ErrConflictingFields, neither is ROLE_CUSTOMER.
func resolveProfiles(profiles []string, role *string) (domain.Profiles, error) {
	switch {
	case profiles != nil && role != nil:
		return nil, domain.ErrConflictingFields
	case role != nil:
		p, err := domain.ParseLegacyRole(*role)
		if err != nil {
			return nil, err
		}
		return domain.Profiles{p}, nil
	case profiles != nil:
		return domain.ParseProfiles(profiles)
	}
	return domain.Profiles{domain.ProfileCustomer}, nil
}

// Get returns a user to an admin or to the user itself.
func (s *UserService) Get(ctx context.Context, actor *domain.Principal, rawID string) (domain.User, error) {
	if actor == nil {
		return domain.User{}, domain.ErrUnauthenticated
	}
	self, err := s.confirmActor(ctx, actor)
	if err != nil {
		return domain.User{}, err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return domain.User{}, err
	}
	if id == actor.UserID {
		// The confirmation read the record already: a self read costs one
		// lookup, the same as without the confirmation.
		return self, nil
	}
	if !actor.IsAdmin() {
		return domain.User{}, domain.ErrForbidden
	}
	return s.users.ByID(ctx, id)
}

// confirmActor reads the caller's account and returns it, or
// domain.ErrInvalidToken when the account is gone or its profiles differ
// from those the access token carries. A token thus loses its power the
// moment its user is deleted, demoted or promoted, not when it expires.
// Every use case with a signed-in caller starts with it; those that read
// the caller's own record anyway reuse this read, so the hot path (own
// record, /me) pays no extra database round trip.
func (s *UserService) confirmActor(ctx context.Context, actor *domain.Principal) (domain.User, error) {
	return confirmActor(ctx, s.users, actor)
}

// confirmActor is UserService.confirmActor over any user repository, for
// every service with admin-only use cases.
func confirmActor(ctx context.Context, users ports.UserRepository, actor *domain.Principal) (domain.User, error) {
	u, err := users.ByID(ctx, actor.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, domain.ErrInvalidToken
	}
	if err != nil {
		return domain.User{}, err
	}
	if !u.Profiles.Equal(actor.Profiles) {
		return domain.User{}, domain.ErrInvalidToken
	}
	return u, nil
}

// Me returns the caller's own record. A valid token whose user is gone is
// an authentication failure, not a 404.
func (s *UserService) Me(ctx context.Context, actor *domain.Principal) (domain.User, error) {
	if actor == nil {
		return domain.User{}, domain.ErrUnauthenticated
	}
	return s.confirmActor(ctx, actor)
}

// ListInput selects a page of users, as the client wrote it: Limit and
// After as in domain.ParsePage, Email an exact filter (normalised here).
type ListInput struct {
	Limit string
	After string
	Email string
}

// UserPage is one page of the user list.
type UserPage = domain.Paged[domain.User, domain.UserID]

// List returns a page of users ordered by id, to admins only.
func (s *UserService) List(ctx context.Context, actor *domain.Principal, in ListInput) (UserPage, error) {
	if actor == nil {
		return UserPage{}, domain.ErrUnauthenticated
	}
	if _, err := s.confirmActor(ctx, actor); err != nil {
		return UserPage{}, err
	}
	page, err := domain.ParsePage(in.Limit, in.After, "a user id", domain.ParseUserID)
	if err != nil {
		return UserPage{}, err
	}
	q := ports.UserListQuery{Page: page.Probe()}
	if in.Email != "" {
		q.Email = domain.NormalizeEmail(in.Email)
	}
	if !actor.IsAdmin() {
		return UserPage{}, domain.ErrForbidden
	}
	users, err := s.users.List(ctx, q)
	if err != nil {
		return UserPage{}, fmt.Errorf("list users: %w", err)
	}
	return domain.Cut(page, users, func(u domain.User) domain.UserID { return u.ID }), nil
}

// UpdateInput is a PUT body: nil fields are absent and kept.
type UpdateInput struct {
	ID              *string
	Name            *string
	Email           *string
	Password        *string
	Profiles        []string
	CurrentPassword *string
}

// Update replaces the fields present in the input, for an admin or the user
// itself. Only an admin may change profiles. A change of password, email or
// profiles ends every refresh-token family of the user.
func (s *UserService) Update(ctx context.Context, actor *domain.Principal, rawID string, in UpdateInput) (domain.User, error) {
	if actor == nil {
		return domain.User{}, domain.ErrUnauthenticated
	}
	self, err := s.confirmActor(ctx, actor)
	if err != nil {
		return domain.User{}, err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return domain.User{}, err
	}
	if in.ID != nil && *in.ID != rawID {
		return domain.User{}, domain.ErrIDMismatch
	}
	var profiles domain.Profiles
	if in.Profiles != nil {
		if profiles, err = domain.ParseProfiles(in.Profiles); err != nil {
			return domain.User{}, err
		}
	}
	var verr domain.ValidationError
	var name string
	var email domain.Email
	if in.Name != nil {
		var msg string
		if name, msg = domain.ParseName(*in.Name); msg != "" {
			verr.Add("name", msg)
		}
	}
	if in.Email != nil {
		var msg string
		if email, msg = domain.ParseEmail(*in.Email); msg != "" {
			verr.Add("email", msg)
		}
	}
	if in.Password != nil {
		// The email rule is checked below, once the effective email is known.
		if msg := domain.CheckPassword(s.hasher.Normalize(*in.Password), ""); msg != "" {
			verr.Add("password", msg)
		}
	}
	if in.Profiles != nil && len(profiles) == 0 {
		verr.Add("profiles", "must hold at least one profile")
	}
	if err := verr.Err(); err != nil {
		return domain.User{}, err
	}
	if !actor.IsAdmin() && actor.UserID != id {
		return domain.User{}, domain.ErrForbidden
	}

	current := self
	if id != actor.UserID {
		if current, err = s.users.ByID(ctx, id); err != nil {
			return domain.User{}, err
		}
	}
	if in.Profiles != nil && !actor.IsAdmin() && !profiles.Equal(current.Profiles) {
		return domain.User{}, domain.ErrForbidden
	}
	changesCredentials := in.Password != nil || (in.Email != nil && email != current.Email)
	if in.CurrentPassword != nil {
		if err := s.checkCurrentPassword(ctx, actor, current, *in.CurrentPassword); err != nil {
			return domain.User{}, err
		}
	} else if s.cfg.RequireCurrentPassword && changesCredentials && !actor.IsAdmin() {
		verr.Add("currentPassword", "is required to change the password or email")
		return domain.User{}, &verr
	}
	var newHash string
	if in.Password != nil {
		effectiveEmail := current.Email
		if in.Email != nil {
			effectiveEmail = email
		}
		if msg := domain.CheckPassword(s.hasher.Normalize(*in.Password), effectiveEmail); msg != "" {
			verr.Add("password", msg)
			return domain.User{}, &verr
		}
		// Hash outside the store transaction: it takes tens of milliseconds
		// and must not hold a write lock.
		if newHash, err = s.hasher.Hash(ctx, *in.Password); err != nil {
			return domain.User{}, fmt.Errorf("hash password: %w", err)
		}
	}

	var (
		revoke  bool
		changed []string
	)
	updated, err := s.users.Update(ctx, id, func(u *domain.User) error {
		if in.CurrentPassword != nil && u.PasswordHash != current.PasswordHash {
			// The password changed since it was verified above.
			return domain.ErrInvalidCredentials
		}
		if in.Profiles != nil && !actor.IsAdmin() && !profiles.Equal(u.Profiles) {
			return domain.ErrForbidden
		}
		revoke, changed = false, nil
		if in.Name != nil && name != u.Name {
			u.Name = name
			changed = append(changed, "name")
		}
		if in.Email != nil && email != u.Email {
			u.Email = email
			revoke = true
			changed = append(changed, "email")
		}
		if in.Password != nil {
			u.PasswordHash = newHash
			revoke = true
			changed = append(changed, "password")
		}
		if in.Profiles != nil && !profiles.Equal(u.Profiles) {
			u.Profiles = profiles
			revoke = true
			changed = append(changed, "profiles")
		}
		u.UpdatedAt = s.clock.Now()
		return nil
	})
	if err != nil {
		return domain.User{}, err
	}
	if len(changed) > 0 {
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditUserUpdated, ActorID: actor.UserID, SubjectID: id,
			Detail: detail("fields", strings.Join(changed, ","))})
	}
	if revoke {
		if err := s.tokens.RevokeUser(ctx, id, s.clock.Now()); err != nil {
			return domain.User{}, fmt.Errorf("revoke sessions: %w", err)
		}
		s.events.note(ctx, domain.AuditEvent{Type: domain.AuditSessionRevoked, ActorID: actor.UserID, SubjectID: id,
			Detail: detail("reason", "credential_change", "scope", "all")})
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "user updated", slog.String("user_id", id.String()),
		slog.Bool("sessions_revoked", revoke))
	return updated, nil
}

// checkCurrentPassword verifies the currentPassword of an update under the
// same per-email lock-out as login, and records failures and refusals as
// login events: a stolen access token guessing at the password is exactly
// what the audit trail must show.
func (s *UserService) checkCurrentPassword(ctx context.Context, actor *domain.Principal, u domain.User, password string) error {
	failures, err := s.throttle.admit(ctx, u.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginThrottled, ActorID: actor.UserID, SubjectID: u.ID,
				Detail: detail("via", "current_password", "retry_after", retryAfterWord(tooMany.RetryAfter))})
		}
		return err
	}
	ok, _, err := s.hasher.Verify(ctx, u.PasswordHash, password)
	if err != nil {
		return fmt.Errorf("verify current password: %w", err)
	}
	if !ok {
		err := s.throttle.failed(ctx, u.Email)
		if errors.Is(err, domain.ErrInvalidCredentials) {
			s.events.note(ctx, domain.AuditEvent{Type: domain.AuditLoginFailed, ActorID: actor.UserID, SubjectID: u.ID,
				Detail: detail("via", "current_password", "reason", "wrong_password")})
		}
		return err
	}
	return s.throttle.succeeded(ctx, u.Email, failures)
}

// Delete removes a user, for admins only; the user's refresh tokens die
// with it.
func (s *UserService) Delete(ctx context.Context, actor *domain.Principal, rawID string) error {
	if actor == nil {
		return domain.ErrUnauthenticated
	}
	if _, err := s.confirmActor(ctx, actor); err != nil {
		return err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return err
	}
	if !actor.IsAdmin() {
		return domain.ErrForbidden
	}
	if err := s.users.Delete(ctx, id); err != nil {
		return err
	}
	s.events.note(ctx, domain.AuditEvent{Type: domain.AuditUserDeleted, ActorID: actor.UserID, SubjectID: id})
	s.log.LogAttrs(ctx, slog.LevelInfo, "user deleted", slog.String("user_id", id.String()))
	return nil
}
