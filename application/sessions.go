package application

import (
	"context"
	"log/slog"

	"github.com/userd/userd/domain"
)

// SessionService lists and ends the sessions of an account: its
// refresh-token families, named by the sid claim of their access tokens.
type SessionService struct{ *base }

// SessionView is one session as the caller sees it.
type SessionView struct {
	domain.RefreshFamily
	// Current is true for the session of the caller's own access token.
	Current bool
}

// List returns the active sessions of the account rawID, newest first.
func (s *SessionService) List(ctx context.Context, actor *domain.Principal, rawID string) ([]SessionView, error) {
	id, err := s.sessionOwner(ctx, actor, rawID)
	if err != nil {
		return nil, err
	}
	fams, err := s.tokens.Sessions(ctx, id, s.clock.Now())
	if err != nil {
		return nil, err
	}
	out := make([]SessionView, len(fams))
	for i, f := range fams {
		out[i] = SessionView{RefreshFamily: f, Current: f.ID == actor.Session.ID}
	}
	return out, nil
}

// Revoke ends the session rawSID of the account rawID: a malformed sid is
// domain.ErrInvalidSessionID, one that is not an active session of that
// account domain.ErrSessionNotFound.
func (s *SessionService) Revoke(ctx context.Context, actor *domain.Principal, rawID, rawSID string) error {
	if _, err := s.signedIn(ctx, actor); err != nil {
		return err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return err
	}
	sid, err := domain.ParseSessionID(rawSID)
	if err != nil {
		return err
	}
	if err := s.mayManage(ctx, actor, id); err != nil {
		return err
	}
	err = s.inTxFor(ctx, domain.WebhookSessionRevoked, func(ctx context.Context) error {
		if err := s.tokens.RevokeSession(ctx, id, sid, s.clock.Now()); err != nil {
			return err
		}
		return s.emitSessionRevoked(ctx, id, sid, string(domain.EndedByRevocation))
	})
	if err != nil {
		return err
	}
	s.sessionsEnded(ctx, sid)
	s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByRevocation, sid))
	return nil
}

// RevokeAll ends every session of the account rawID, the caller's own
// among them when it is the caller's account.
func (s *SessionService) RevokeAll(ctx context.Context, actor *domain.Principal, rawID string) error {
	id, err := s.sessionOwner(ctx, actor, rawID)
	if err != nil {
		return err
	}
	var ended []string
	err = s.inTxFor(ctx, domain.WebhookSessionRevoked, func(ctx context.Context) error {
		var err error
		if ended, err = s.tokens.RevokeUser(ctx, id, s.clock.Now()); err != nil {
			return err
		}
		return s.emitSessionsRevoked(ctx, id, string(domain.EndedByRevocation))
	})
	if err != nil {
		return err
	}
	s.sessionsEnded(ctx, ended...)
	s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByRevocation, ""))
	return nil
}

// sessionOwner runs the checks of the contract's order for the account
// rawID: the caller (401), the id's form (400), the caller's right (403),
// the account's existence (404).
func (s *SessionService) sessionOwner(ctx context.Context, actor *domain.Principal, rawID string) (domain.UserID, error) {
	if _, err := s.signedIn(ctx, actor); err != nil {
		return "", err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return "", err
	}
	return id, s.mayManage(ctx, actor, id)
}

// mayManage checks the caller's right over the sessions of id, then that
// the account exists (the caller's own was read by signedIn).
func (s *SessionService) mayManage(ctx context.Context, actor *domain.Principal, id domain.UserID) error {
	if err := actor.CanManageSessions(id); err != nil {
		return err
	}
	if id == actor.UserID {
		return nil
	}
	_, err := s.users.ByID(ctx, id)
	return err
}

// sessionsEnded makes the ended sessions' access tokens invalid at once on
// this node and, through the SessionEndings, on the others. It is called
// after the store committed the end; a failure to publish is logged, as
// the other nodes' catch-up finds the end in the store.
func (b *base) sessionsEnded(ctx context.Context, sids ...string) {
	if len(sids) == 0 {
		return
	}
	b.ended.add(b.clock.Now(), sids...)
	if b.endings == nil {
		return
	}
	if err := b.endings.Publish(context.WithoutCancel(ctx), sids); err != nil {
		b.log.LogAttrs(ctx, slog.LevelWarn, "ended sessions not published; the other nodes catch up from the store",
			slog.Int("sessions", len(sids)), slog.String("error", err.Error()))
	}
}
