package application

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// SessionService lists and ends the sessions of an account: its
// refresh-token families, named by the sid claim of their access tokens.
type SessionService struct {
	core
	sessionPorts
}

// sessionPorts are what the SessionService uses.
type sessionPorts struct {
	users       ports.UserRepository
	tokens      ports.RefreshTokenStore
	clients     ports.OAuthClientStore
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
}

// SessionView is one session as the caller sees it.
type SessionView struct {
	domain.RefreshFamily
	// Current is true for the session of the caller's own access token.
	Current bool
	// ClientName names the OpenID client the session was granted to
	// (RefreshFamily.ClientID); empty for userd's own sessions, and for
	// a client deleted since (whose sessions end with it).
	ClientName string
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
	names := map[domain.OAuthClientID]string{}
	for i, f := range fams {
		out[i] = SessionView{RefreshFamily: f, Current: f.ID == actor.Session.ID}
		if !f.ForClient() {
			continue
		}
		name, ok := names[f.ClientID]
		if !ok {
			c, err := s.clients.ByID(ctx, f.ClientID)
			if err != nil && !errors.Is(err, domain.ErrOAuthClientNotFound) {
				return nil, err
			}
			name, names[f.ClientID] = c.Name, c.Name
		}
		out[i].ClientName = name
	}
	return out, nil
}

// Revoke ends the session rawSID of the account rawID: a malformed sid is
// domain.ErrInvalidSessionID, one that is not an active session of that
// account domain.ErrSessionNotFound.
func (s *SessionService) Revoke(ctx context.Context, actor *domain.Principal, rawID, rawSID string) error {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
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
	err = s.webhooks.inTxFor(ctx, domain.WebhookSessionRevoked, func(ctx context.Context) error {
		if err := s.tokens.RevokeSession(ctx, id, sid, s.clock.Now()); err != nil {
			return err
		}
		return s.webhooks.sessionRevoked(ctx, id, sid, string(domain.EndedByRevocation))
	})
	if err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, sid)
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
	err = s.webhooks.inTxFor(ctx, domain.WebhookSessionRevoked, func(ctx context.Context) error {
		var err error
		if ended, err = s.tokens.RevokeUser(ctx, id, s.clock.Now()); err != nil {
			return err
		}
		return s.webhooks.sessionsRevoked(ctx, id, string(domain.EndedByRevocation))
	})
	if err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, ended...)
	s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, id, domain.EndedByRevocation, ""))
	return nil
}

// sessionOwner runs the checks of the contract's order for the account
// rawID: the caller (401), the id's form (400), the caller's right (403),
// the account's existence (404).
func (s *SessionService) sessionOwner(ctx context.Context, actor *domain.Principal, rawID string) (domain.UserID, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
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

// sessionEnds makes the access tokens of ended sessions invalid: at once
// on this node (the set Authenticate consults) and, through the
// SessionEndings, on the others.
type sessionEnds struct {
	set *endedSessions
	// endings tells the other nodes, and this one of theirs; nil for a
	// single node.
	endings ports.SessionEndings
	clock   ports.Clock
	log     *slog.Logger
}

// newSessionEnds keeps an ended session for keep, and hears of the
// sessions the other nodes end.
func newSessionEnds(keep time.Duration, endings ports.SessionEndings, clock ports.Clock, log *slog.Logger) *sessionEnds {
	e := &sessionEnds{set: newEndedSessions(keep), endings: endings, clock: clock, log: log}
	if endings != nil {
		endings.Subscribe(func(sids []string) { e.set.add(clock.Now(), sids...) })
	}
	return e
}

// ended makes the ended sessions' access tokens invalid at once on this
// node and, through the SessionEndings, on the others. It is called after
// the store committed the end; a failure to publish is logged, as the
// other nodes' catch-up finds the end in the store.
func (e *sessionEnds) ended(ctx context.Context, sids ...string) {
	if len(sids) == 0 {
		return
	}
	e.set.add(e.clock.Now(), sids...)
	if e.endings == nil {
		return
	}
	if err := e.endings.Publish(context.WithoutCancel(ctx), sids); err != nil {
		e.log.LogAttrs(ctx, slog.LevelWarn, "ended sessions not published; the other nodes catch up from the store",
			slog.Int("sessions", len(sids)), slog.String("error", err.Error()))
	}
}

// has reports whether the session sid ended lately, here or on another
// node: a map lookup, for every authenticated request.
func (e *sessionEnds) has(sid string) bool { return e.set.has(sid) }
