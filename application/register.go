package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
)

// RegisterInput is a create request. Profiles nil means absent; Role is the
// legacy single-role field, nil when absent.
type RegisterInput struct {
	Name     string
	Email    string
	Password string
	Profiles []string
	Role     *string
	// Metadata and AppMetadata are JSON as sent, nil when absent; only an
	// admin sets appMetadata (domain.CanRegister).
	Metadata, AppMetadata []byte
}

// Register creates a user. Who may create what is domain.CanRegister: anyone
// a ROLE_CUSTOMER account while open registration is on, only an admin an
// admin, or anything when registration is closed.
func (s *UserService) Register(ctx context.Context, actor *domain.Principal, in RegisterInput) (domain.User, error) {
	if actor != nil {
		if _, err := signedIn(ctx, s.users, actor); err != nil {
			return domain.User{}, err
		}
	}
	profiles, err := domain.ResolveProfiles(in.Profiles, in.Role)
	if err != nil {
		return domain.User{}, err
	}
	nu, err := s.validateNewUser(in.Name, in.Email, in.Password, profiles, in.Metadata, in.AppMetadata)
	if err != nil {
		return domain.User{}, err
	}
	if err := actor.CanRegister(nu, s.openRegistration); err != nil {
		return domain.User{}, err
	}
	// The address is proven by the link of the verification message sent
	// with the account, whoever registers it.
	u, err := s.create(ctx, nu, in.Password, false)
	if err != nil {
		return domain.User{}, err
	}
	s.events.note(ctx, domain.UserCreatedEvent(actorID(actor), u.ID, u.Profiles, domain.OriginAPI))
	return u, nil
}

// ErrEmailHeldByNonAdmin means the operator asked for an admin with an email
// that an account without ROLE_ADMIN holds. Silently keeping that account
// would leave the deployment without the admin the operator believes it
// has, and would reward whoever registered the address first.
var ErrEmailHeldByNonAdmin = errors.New("the email belongs to an account that is not an admin")

// EnsureAdmin creates an admin with the given email unless an admin has it
// already, in which case it reports created false and changes nothing; an
// account without ROLE_ADMIN holding the email is ErrEmailHeldByNonAdmin
// (with that account). It serves `userd admin create` and the bootstrap
// admin of the configuration: the operator, who holds the database's
// credentials anyway.
func (s *UserService) EnsureAdmin(ctx context.Context, name, email, password string) (domain.User, bool, error) {
	nu, err := s.validateNewUser(name, email, password, domain.Profiles{domain.ProfileAdmin}, nil, nil)
	if err != nil {
		return domain.User{}, false, err
	}
	if u, err := s.users.ByEmail(ctx, nu.Email); err == nil {
		return existingAdmin(u)
	} else if !errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, false, err
	}
	// The operator vouches for the address: the admin starts verified.
	u, err := s.create(ctx, nu, password, true)
	if errors.Is(err, domain.ErrEmailTaken) {
		// Another node bootstrapped the same admin at the same moment (or
		// someone registered the address meanwhile).
		if u, err = s.users.ByEmail(ctx, nu.Email); err != nil {
			return domain.User{}, false, err
		}
		return existingAdmin(u)
	}
	if err != nil {
		return domain.User{}, false, err
	}
	s.events.note(ctx, domain.UserCreatedEvent("", u.ID, u.Profiles, domain.OriginOperator))
	return u, true, nil
}

// existingAdmin is EnsureAdmin's answer when u already holds the email.
func existingAdmin(u domain.User) (domain.User, bool, error) {
	if !u.IsAdmin() {
		return u, false, ErrEmailHeldByNonAdmin
	}
	return u, false, nil
}

// validateNewUser applies the rules of a new account and the password
// policy, reporting every invalid field at once. metadata and appMetadata
// are JSON as sent, nil when absent (the empty objects).
func (s *UserService) validateNewUser(name, email, password string, profiles domain.Profiles,
	metadata, appMetadata []byte) (domain.NewUser, error) {
	nu, verr := domain.ValidateNewUser(name, email, profiles)
	nu.SetMetadata(metadata, appMetadata, &verr)
	if msg := domain.CheckPassword(s.hasher.Normalize(password), nu.Email); msg != "" {
		verr.Add(domain.FieldPassword, msg)
	}
	return nu, verr.Err()
}

// create hashes the password and stores the new account; unless its
// email counts as verified from the start, a verification message goes
// with it, in the same transaction.
func (s *UserService) create(ctx context.Context, nu domain.NewUser, password string, verified bool) (domain.User, error) {
	hash, err := s.hasher.Hash(ctx, password)
	if err != nil {
		return domain.User{}, fmt.Errorf("hash password: %w", err)
	}
	u := nu.User(hash, s.clock.Now())
	u.EmailVerified = verified
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.users.Create(ctx, u); err != nil {
			return err
		}
		if err := s.webhooks.emit(ctx, domain.WebhookUserCreated, u.ID, map[string]any{"profiles": u.Profiles.Strings()}); err != nil {
			return err
		}
		if verified {
			return nil
		}
		return s.mail.sendLink(ctx, u, domain.LinkVerifyEmail, false, domain.RequestMetaFrom(ctx).Lang)
	})
	if err != nil {
		return domain.User{}, fmt.Errorf("create user: %w", err)
	}
	if !verified {
		s.delivery.wake()
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "user created", slog.String("user_id", u.ID.String()),
		slog.Any("profiles", u.Profiles.Strings()))
	return u, nil
}
