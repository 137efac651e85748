package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// UserListQuery selects one page of users ordered by id.
type UserListQuery struct {
	// Page is the cursor and the number of users wanted.
	Page domain.Page[domain.UserID]
	// Email, when set, returns only the user with exactly this normalised email.
	Email domain.Email
	// EmailPrefix, when set, returns only the users whose email starts
	// with it. It is lower case, like the stored emails
	// (domain.ParseEmailPrefix makes it), and no character of it is a
	// wildcard, '%', '_' and '\' included. With Email as well, both apply.
	// Neither filter is an error, whatever its bytes: bytes no email holds
	// (NUL, invalid UTF-8) match nobody.
	EmailPrefix string
}

// UserRepository stores user accounts. Every method may also return an
// error wrapping domain.ErrUnavailable when the store cannot serve for now.
type UserRepository interface {
	// Create stores a new user. It returns domain.ErrEmailTaken when another
	// user already has the email.
	Create(ctx context.Context, u domain.User) error
	// CreateMany stores new users all or nothing, in one transaction: when
	// any of them cannot be stored, none is. It returns domain.ErrEmailTaken
	// when a stored user already has one of the emails or two of users share
	// one. An empty slice stores nothing and succeeds. Callers keep batches
	// to a few hundred users: the transaction holds the write lock.
	CreateMany(ctx context.Context, users []domain.User) error
	// ByID returns the user, or domain.ErrUserNotFound.
	ByID(ctx context.Context, id domain.UserID) (domain.User, error)
	// ByEmail returns the user with the normalised email, or
	// domain.ErrUserNotFound.
	ByEmail(ctx context.Context, email domain.Email) (domain.User, error)
	// List returns up to q.Page.Limit users ordered by id ascending, those
	// after q.Page.After when it is set.
	List(ctx context.Context, q UserListQuery) ([]domain.User, error)
	// Update loads the user, lets fn change it, and stores the result
	// atomically: no concurrent update is lost. The id and CreatedAt are
	// kept whatever fn does. It returns the stored user,
	// domain.ErrUserNotFound, domain.ErrEmailTaken, domain.ErrLastAdmin
	// when the change would leave no enabled admin (the user was one and
	// is not after fn: disabled or demoted, with no other enabled admin),
	// or fn's error unchanged; in each case nothing is written. fn runs
	// inside the store's transaction or lock: it must be quick and must not
	// call the store. Concurrent changes never leave zero enabled admins.
	Update(ctx context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error)
	// Delete removes the user and, with it, every refresh-token family and
	// link token of the user. It returns domain.ErrUserNotFound when there
	// is none, and domain.ErrLastAdmin when the user is the last enabled
	// admin.
	Delete(ctx context.Context, id domain.UserID) error
}
