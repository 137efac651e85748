package application

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// UserService implements the user-record use cases: register, read, list,
// update, delete, and the operator's admin. Each follows the contract's
// order of checks: authentication, the form of the request, authorization,
// existence.
type UserService struct {
	core
	userPorts
}

// userPorts are what the UserService uses.
type userPorts struct {
	users  ports.UserRepository
	tokens ports.RefreshTokenStore
	links  ports.LinkTokenStore
	tx     ports.Transactor
	hasher ports.PasswordHasher
	// password checks a caller's current password; mail, webhooks and
	// sessionEnds carry out what a change causes.
	password    currentPassword
	mail        *mailQueue
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	delivery    wakeup
	// openRegistration and requireCurrentPassword are Config's.
	openRegistration       bool
	requireCurrentPassword bool
}

// Get returns a user to an admin or to the user itself.
func (s *UserService) Get(ctx context.Context, actor *domain.Principal, rawID string) (domain.User, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return domain.User{}, err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return domain.User{}, err
	}
	if err := actor.CanReadUser(id); err != nil {
		return domain.User{}, err
	}
	if id == actor.UserID {
		// The caller's own record was read above: a self read costs one
		// lookup.
		return self, nil
	}
	return s.users.ByID(ctx, id)
}

// Me returns the caller's own record. A valid token whose user is gone is
// an authentication failure, not a 404.
func (s *UserService) Me(ctx context.Context, actor *domain.Principal) (domain.User, error) {
	return signedIn(ctx, s.users, actor)
}

// ListInput selects a page of users, as the client wrote it: Limit and
// After as in domain.ParsePage, Email an exact filter and EmailPrefix a
// search by the start of the email (both normalised here, one at most).
type ListInput struct {
	Limit       string
	After       string
	Email       string
	EmailPrefix string
}

// The filters of the user list, as validation errors name them.
const (
	FieldEmail       = "email"
	FieldEmailPrefix = "emailPrefix"
)

// UserPage is one page of the user list.
type UserPage = domain.Paged[domain.User, domain.UserID]

// List returns a page of users ordered by id, to admins only. A bad page
// is a domain.PageError and a bad filter a domain.ValidationError, both
// reported before a missing right: they are about the form of the request.
func (s *UserService) List(ctx context.Context, actor *domain.Principal, in ListInput) (UserPage, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return UserPage{}, err
	}
	page, err := domain.ParsePage(in.Limit, in.After, "a user id", domain.ParseUserID)
	if err != nil {
		return UserPage{}, err
	}
	q, err := userListQuery(in)
	if err != nil {
		return UserPage{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return UserPage{}, err
	}
	q.Page = page.Probe()
	users, err := s.users.List(ctx, q)
	if err != nil {
		return UserPage{}, fmt.Errorf("list users: %w", err)
	}
	return domain.Cut(page, users, func(u domain.User) domain.UserID { return u.ID }), nil
}

// userListQuery reads the filters of in; one that is empty once
// normalised is absent. The exact email is only normalised: a string that
// is no email matches nobody, as it always has. The two filters exclude
// each other: together they could only narrow an exact match to itself or
// to nothing, so a client sending both has most likely mixed up its
// parameters, and is told so rather than served a puzzling page.
func userListQuery(in ListInput) (ports.UserListQuery, error) {
	q := ports.UserListQuery{Email: domain.NormalizeEmail(in.Email)}
	prefix, msg := domain.ParseEmailPrefix(in.EmailPrefix)
	verr := &domain.ValidationError{}
	switch {
	case msg != "":
		verr.Add(FieldEmailPrefix, msg)
	case prefix != "" && q.Email != "":
		verr.Add(FieldEmailPrefix, "cannot be combined with "+FieldEmail)
	}
	q.EmailPrefix = prefix
	return q, verr.Err()
}

// Delete removes a user, for admins only; the user's refresh tokens die
// with it.
func (s *UserService) Delete(ctx context.Context, actor *domain.Principal, rawID string) error {
	id, err := adminOnUser(ctx, s.users, actor, rawID)
	if err != nil {
		return err
	}
	// The store deletes the sessions with the account: they are ended
	// first, in the same transaction, to learn their ids, whose access
	// tokens must be refused as well.
	var ended []string
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if ended, err = s.tokens.RevokeUser(ctx, id, s.clock.Now()); err != nil {
			return err
		}
		if err := s.users.Delete(ctx, id); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookUserDeleted, id, nil)
	})
	if err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, ended...)
	s.events.note(ctx, domain.UserDeletedEvent(actor.UserID, id))
	s.log.LogAttrs(ctx, slog.LevelInfo, "user deleted", slog.String("user_id", id.String()))
	return nil
}
