package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
)

// UpdateInput is a PUT body: nil fields are absent and kept.
type UpdateInput struct {
	ID              *string
	Name            *string
	Email           *string
	Password        *string
	Profiles        []string
	CurrentPassword *string
}

// FieldCurrentPassword names the current password in validation errors.
const FieldCurrentPassword = "currentPassword"

// Update replaces the fields present in the input, for an admin or the user
// itself (domain.CanUpdateUser, CanChangeProfiles). A change of password,
// email or profiles ends every session of the user.
func (s *UserService) Update(ctx context.Context, actor *domain.Principal, rawID string, in UpdateInput) (domain.User, error) {
	self, err := s.signedIn(ctx, actor)
	if err != nil {
		return domain.User{}, err
	}
	id, change, err := s.parseUpdate(rawID, in)
	if err != nil {
		return domain.User{}, err
	}
	current, err := s.authorizeUpdate(ctx, actor, self, id, change)
	if err != nil {
		return domain.User{}, err
	}
	hash, err := s.prepareCredentials(ctx, actor, current, change, in.CurrentPassword)
	if err != nil {
		return domain.User{}, err
	}
	var changes domain.Changes
	updated, err := s.users.Update(ctx, id, func(u *domain.User) error {
		if in.CurrentPassword != nil && u.PasswordHash != current.PasswordHash {
			// The password changed since it was verified above.
			return domain.ErrInvalidCredentials
		}
		// The profiles may have changed since they were judged above.
		if err := actor.CanChangeProfiles(u.Profiles, change.Profiles); err != nil {
			return err
		}
		changes = u.Apply(change, hash, s.clock.Now())
		return nil
	})
	if err != nil {
		return domain.User{}, err
	}
	if err := s.recordUpdate(ctx, actor, id, changes); err != nil {
		return domain.User{}, err
	}
	return updated, nil
}

// parseUpdate checks the form of an update: the id, the body's id, the
// profiles and every field.
func (s *UserService) parseUpdate(rawID string, in UpdateInput) (domain.UserID, domain.UserChange, error) {
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return "", domain.UserChange{}, err
	}
	if in.ID != nil && *in.ID != rawID {
		return "", domain.UserChange{}, domain.ErrIDMismatch
	}
	var password *string
	if in.Password != nil {
		// The policy judges what is hashed (NFKC is idempotent, so hashing
		// the normalised form stores the same as hashing the raw one).
		normalized := s.hasher.Normalize(*in.Password)
		password = &normalized
	}
	change, err := domain.ParseUserChange(in.Name, in.Email, password, in.Profiles)
	if err != nil {
		return "", domain.UserChange{}, err
	}
	return id, change, nil
}

// authorizeUpdate decides whether actor may make the change to the account
// id, and returns that account as it is now.
func (s *UserService) authorizeUpdate(ctx context.Context, actor *domain.Principal, self domain.User,
	id domain.UserID, change domain.UserChange) (domain.User, error) {
	if err := actor.CanUpdateUser(id); err != nil {
		return domain.User{}, err
	}
	current := self
	if id != actor.UserID {
		var err error
		if current, err = s.users.ByID(ctx, id); err != nil {
			return domain.User{}, err
		}
	}
	if err := actor.CanChangeProfiles(current.Profiles, change.Profiles); err != nil {
		return domain.User{}, err
	}
	return current, nil
}

// prepareCredentials verifies the current password when it is sent (or
// required), checks the new password against the account's email after the
// change, and returns its hash ("" when the password does not change).
// Hashing happens here, outside the store's transaction: it takes tens of
// milliseconds and must not hold a write lock.
func (s *UserService) prepareCredentials(ctx context.Context, actor *domain.Principal, current domain.User,
	change domain.UserChange, currentPassword *string) (string, error) {
	switch {
	case currentPassword != nil:
		if err := s.checkCurrentPassword(ctx, actor, current, *currentPassword); err != nil {
			return "", err
		}
	case actor.NeedsCurrentPassword(change, current, s.cfg.RequireCurrentPassword):
		verr := &domain.ValidationError{}
		verr.Add(FieldCurrentPassword, "is required to change the password or email")
		return "", verr
	}
	if change.Password == nil {
		return "", nil
	}
	if err := change.CheckPasswordFor(current); err != nil {
		return "", err
	}
	hash, err := s.hasher.Hash(ctx, *change.Password)
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return hash, nil
}

// recordUpdate audits the change and ends the sessions it must end.
func (s *UserService) recordUpdate(ctx context.Context, actor *domain.Principal, id domain.UserID, changes domain.Changes) error {
	if len(changes.Fields) > 0 {
		s.events.note(ctx, domain.UserUpdatedEvent(actor.UserID, id, changes.Fields))
	}
	if changes.EndsSessions {
		if err := s.tokens.RevokeUser(ctx, id, s.clock.Now()); err != nil {
			return fmt.Errorf("revoke sessions: %w", err)
		}
		s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByCredentialChange, ""))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "user updated", slog.String("user_id", id.String()),
		slog.Bool("sessions_revoked", changes.EndsSessions))
	return nil
}

// checkCurrentPassword verifies the currentPassword of an update under the
// same per-email lock-out as login, and records failures and refusals as
// login events: a stolen access token guessing at the password is exactly
// what the audit trail must show.
func (s *UserService) checkCurrentPassword(ctx context.Context, actor *domain.Principal, u domain.User, password string) error {
	rec, err := s.throttle.reserve(ctx, u.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			s.events.note(ctx, domain.LoginThrottledEvent(actor.UserID, u.ID, domain.CheckCurrentPassword, "", tooMany.RetryAfter))
		}
		return err
	}
	ok, _, err := s.hasher.Verify(ctx, u.PasswordHash, password)
	if err != nil {
		return s.throttle.unchecked(ctx, u.Email, fmt.Errorf("verify current password: %w", err))
	}
	if !ok {
		err := s.throttle.failed(ctx, rec)
		s.events.note(ctx, domain.LoginFailedEvent(actor.UserID, u.ID, domain.CheckCurrentPassword, domain.FailureWrongPassword))
		return err
	}
	return s.throttle.succeeded(ctx, u.Email)
}
