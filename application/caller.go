package application

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
)

// signedIn is how every use case with a signed-in caller starts: it
// returns ErrUnauthenticated for an anonymous caller, and otherwise reads
// the caller's account and returns it, or domain.ErrInvalidToken when the
// account is gone or its profiles differ from those the access token
// carries, or the account is disabled. A token thus loses its power the
// moment its user is deleted, disabled, demoted or promoted, not when it
// expires. Use cases that need the
// caller's own record reuse this read, so the hot path (own record, /me)
// pays no extra database round trip.
func (b *base) signedIn(ctx context.Context, actor *domain.Principal) (domain.User, error) {
	if actor == nil {
		return domain.User{}, domain.ErrUnauthenticated
	}
	u, err := b.users.ByID(ctx, actor.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, domain.ErrInvalidToken
	}
	if err != nil {
		return domain.User{}, err
	}
	if !u.Profiles.Equal(actor.Profiles) || u.Disabled {
		return domain.User{}, domain.ErrInvalidToken
	}
	return u, nil
}

// actorID is the user id of a principal, empty for an anonymous caller.
func actorID(p *domain.Principal) domain.UserID {
	if p == nil {
		return ""
	}
	return p.UserID
}
