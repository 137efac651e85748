package application

import (
	"context"
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
	EmailVerified   *bool
	Disabled        *bool
	CurrentPassword *string
	// Metadata and AppMetadata are JSON as sent, nil when absent.
	Metadata, AppMetadata []byte
}

// FieldCurrentPassword names the current password in validation errors.
const FieldCurrentPassword = "currentPassword"

// Update replaces the fields present in the input, for an admin or the user
// itself (domain.CanUpdateUser, CanChangeAccount). A change of password,
// email or profiles ends every session of the user.
func (s *UserService) Update(ctx context.Context, actor *domain.Principal, rawID string, in UpdateInput) (domain.User, error) {
	self, err := signedIn(ctx, s.users, actor)
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
	var (
		changes domain.Changes
		updated domain.User
		ended   []string
	)
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		updated, err = s.users.Update(ctx, id, func(u *domain.User) error {
			if in.CurrentPassword != nil && u.PasswordHash != current.PasswordHash {
				// The password changed since it was verified above.
				return domain.ErrInvalidCredentials
			}
			// The account may have changed since it was judged above.
			if err := actor.CanChangeAccount(*u, change); err != nil {
				return err
			}
			changes = u.Apply(change, hash, s.clock.Now())
			return nil
		})
		if err != nil {
			return err
		}
		if ended, err = s.followUpdate(ctx, updated, change, changes, id == actor.UserID); err != nil {
			return err
		}
		return s.webhooks.userChanges(ctx, updated, changes)
	})
	if err != nil {
		return domain.User{}, err
	}
	s.sessionEnds.ended(ctx, ended...)
	s.recordUpdate(ctx, actor, id, changes)
	return updated, nil
}

// followUpdate does what a change causes, in its transaction: the
// sessions end when they must; a new password voids the reset links; a
// new email gets a verification link (unless an admin verified it in the
// same change) and the old one a notice; a new password, a notice. own
// says the account's own user made the change: its change of email then
// takes from the account's mail budget (see mailQueue.checkBudget).
func (s *UserService) followUpdate(ctx context.Context, u domain.User, change domain.UserChange, changes domain.Changes,
	own bool) (ended []string, err error) {
	now := s.clock.Now()
	if changes.EndsSessions {
		if ended, err = s.tokens.RevokeUser(ctx, u.ID, now); err != nil {
			return nil, fmt.Errorf("revoke sessions: %w", err)
		}
	}
	if change.Password != nil {
		// A reset link mailed before the change would set a password over
		// the one just chosen: whoever changes a password (after a theft,
		// say) expects every other way in to close, a pending link too.
		if err := s.links.Void(ctx, u.ID, domain.LinkResetPassword, now); err != nil {
			return nil, fmt.Errorf("void reset links: %w", err)
		}
	}
	lang := domain.RequestMetaFrom(ctx).Lang
	if changes.OldEmail != "" {
		if own {
			// After the account's row was locked by the update: two changes
			// at once cannot both find the budget free.
			if err := s.mail.checkBudget(ctx, u.ID, now); err != nil {
				return nil, err
			}
		}
		if !u.EmailVerified {
			// Counted (requested) when the user asked for the change: the
			// link stands for the two messages of the change.
			if err := s.mail.sendLink(ctx, u, domain.LinkVerifyEmail, own, lang); err != nil {
				return nil, err
			}
		}
		if err := s.mail.enqueue(ctx, emailChangedNotice(u, changes, lang), false); err != nil {
			return nil, err
		}
	}
	if change.Password != nil {
		if err := s.mail.enqueue(ctx, passwordChangedNotice(u, lang), false); err != nil {
			return nil, err
		}
	}
	return ended, nil
}

// emailChangedNotice is the notice to the address u had before the change
// of email that changes describes. An address never verified is told
// neither the account's name nor the new address: both are text that
// whoever made the change chose, and the old address may never have been
// theirs.
func emailChangedNotice(u domain.User, changes domain.Changes, lang string) domain.Mail {
	m := domain.Mail{To: changes.OldEmail, User: u.ID, Template: domain.MailEmailChanged, Lang: lang}
	if changes.OldEmailVerified {
		m.Name, m.Data = u.Name, map[string]string{"new_email": u.Email.String()}
	}
	return m
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
	change, err := domain.ParseUserChange(domain.UserChangeInput{Name: in.Name, Email: in.Email, Password: password,
		Profiles: in.Profiles, EmailVerified: in.EmailVerified, Disabled: in.Disabled,
		Metadata: in.Metadata, AppMetadata: in.AppMetadata})
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
	if err := actor.CanChangeAccount(current, change); err != nil {
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
		// A personal access token checks no password: it would let a
		// stolen token guess at it.
		if err := actor.RequireInteractive(); err != nil {
			return "", err
		}
		if err := s.password.check(ctx, actor, current, *currentPassword); err != nil {
			return "", err
		}
	case actor.NeedsCurrentPassword(change, current, s.requireCurrentPassword):
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

// recordUpdate audits a committed change and wakes the sender for the
// messages it queued.
func (s *UserService) recordUpdate(ctx context.Context, actor *domain.Principal, id domain.UserID, changes domain.Changes) {
	if len(changes.Fields) > 0 {
		s.events.note(ctx, domain.UserUpdatedEvent(actor.UserID, id, changes.Fields))
		s.delivery.wake()
	}
	if changes.EndsSessions {
		s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByCredentialChange, ""))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "user updated", slog.String("user_id", id.String()),
		slog.Bool("sessions_revoked", changes.EndsSessions))
}
