package application

import (
	"context"
	"log/slog"

	"github.com/userd/userd/domain"
)

// Unlock lifts the login lock-out of a user's email at an admin's hand:
// every failed password check counted against the email is forgotten, so
// the next one is admitted at once, as after a right password. Admins
// only; the checks come in the contract's order (signed in, the id's
// form, admin, the user exists).
//
// It is the same whether or not the email is locked, and is audited
// either way (login.unlocked, the admin as actor): the admin acted, and
// the trail should say so even when there was nothing to lift. A disabled
// account is unlocked too: the lock-out and the disabling are separate,
// and enabling the account later should not find it locked. Nothing else
// changes: not the password, not the sessions.
//
// The lock-out is per email, whoever guessed: an attacker still guessing
// at the account gets a fresh budget of domain.LoginFreeFailures checks.
// Unlocking suits an owner who mistyped; an account under attack wants a
// password reset instead.
func (s *AuthService) Unlock(ctx context.Context, actor *domain.Principal, rawUserID string) error {
	id, err := adminOnUser(ctx, s.users, actor, rawUserID)
	if err != nil {
		return err
	}
	u, err := s.users.ByID(ctx, id)
	if err != nil {
		return err
	}
	if err := s.throttle.forget(ctx, u.Email); err != nil {
		return err
	}
	s.events.note(ctx, domain.LoginUnlockedEvent(actor.UserID, id))
	s.log.LogAttrs(ctx, slog.LevelInfo, "login lock-out lifted by an admin", slog.String("user_id", id.String()),
		slog.String("admin_id", actor.UserID.String()))
	return nil
}
