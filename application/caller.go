package application

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// signedIn is how every use case with a signed-in caller starts: it
// returns ErrUnauthenticated for an anonymous caller, and otherwise reads
// the caller's account and returns it, or domain.ErrInvalidToken when the
// account is gone or its profiles differ from those the access token
// carries, or the account is disabled. A token thus loses its power the
// moment its user is deleted, disabled, demoted or promoted, not when it
// expires. Use cases that need the
// caller's own record reuse this read, so the hot path (own record, /me)
// pays no extra database round trip. A personal access token's caller
// was read with the token, in the same request: that read serves. The
// read is served by the node's account cache when it holds the account
// (readCaller): every change of an account drops it, at once here and
// within a second on the other nodes.
func signedIn(ctx context.Context, users ports.UserRepository, actor *domain.Principal) (domain.User, error) {
	if actor == nil {
		return domain.User{}, domain.ErrUnauthenticated
	}
	if actor.Token != nil && actor.Token.Account.ID == actor.UserID {
		// A personal access token's lookup read the account in this
		// request, with the token (PersonalTokenService.authenticate):
		// the same checks hold of that read.
		return fresh(actor.Token.Account, actor)
	}
	u, err := readCaller(ctx, users, actor.UserID, func(u domain.User) bool {
		_, err := fresh(u, actor)
		return err == nil
	})
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, domain.ErrInvalidToken
	}
	if err != nil {
		return domain.User{}, err
	}
	return fresh(u, actor)
}

// fresh returns u, the caller's account as just read, unless it is
// disabled or its profiles differ from those actor carries.
func fresh(u domain.User, actor *domain.Principal) (domain.User, error) {
	if !u.Profiles.Equal(actor.Profiles) || u.Disabled {
		return domain.User{}, domain.ErrInvalidToken
	}
	return u, nil
}

// adminOnUser is how every admin's use case on one user starts, in the
// contract's order: a signed-in caller (signedIn), a well-formed user id
// (domain.ErrInvalidID), then an admin (domain.ErrForbidden). The form of
// the request is judged before the caller's right. It returns the id; the
// user's existence is the use case's to check, in its own read.
func adminOnUser(ctx context.Context, users ports.UserRepository, actor *domain.Principal, rawID string) (domain.UserID, error) {
	if _, err := signedIn(ctx, users, actor); err != nil {
		return "", err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return "", err
	}
	if err := actor.RequireAdmin(); err != nil {
		return "", err
	}
	return id, nil
}

// actorID is the user id of a principal, empty for an anonymous caller.
func actorID(p *domain.Principal) domain.UserID {
	if p == nil {
		return ""
	}
	return p.UserID
}
