package application

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// issuePair issues the access token of user's session, with the hook's
// claims, and returns it with the session's refresh token.
func issuePair(ctx context.Context, issuer ports.TokenIssuer, user domain.User, session domain.Session,
	claims domain.HookClaims, refresh string, refreshExpires time.Time) (TokenPair, error) {
	access, err := issuer.Issue(ctx, user, session, claims)
	if err != nil {
		return TokenPair{}, fmt.Errorf("issue access token: %w", err)
	}
	return TokenPair{Access: access, RefreshToken: refresh, RefreshExpiresAt: refreshExpires, User: user}, nil
}

// Refresh exchanges a refresh token for a new pair, rotating it. A repeat of
// the same token within the grace window gets the same successor; any other
// reuse revokes the whole family (RFC 9700 reuse detection). A token of a
// session granted to an OpenID client is refused here as unknown: only
// the provider's token endpoint, for that client, takes it. The claims
// hook is asked again at each refresh, before the token is rotated: when
// it refuses or cannot answer, the token stays as it was, for a retry.
func (s *AuthService) Refresh(ctx context.Context, token string) (_ TokenPair, err error) {
	outcome := ports.RefreshSucceeded
	defer func() { s.events.refreshed(refreshOutcome(outcome, err)) }()
	var (
		user   domain.User
		claims domain.HookClaims
	)
	prepare := func(ctx context.Context, f domain.RefreshFamily) error {
		var err error
		if user, err = refreshedUser(ctx, s.users, f.UserID); err != nil {
			return err
		}
		claims, err = s.hook.forUser(ctx, domain.ClaimsGrantRefresh, user, f.ID, f.AMR, "", nil)
		return err
	}
	var r rotated
	if s.hook.asks() {
		r, err = s.refresh.rotate(ctx, token, ownSession, prepare)
	} else {
		r, err = s.refresh.rotateOwn(ctx, token, prepare)
	}
	if r.repeat {
		outcome = ports.RefreshGraceRepeat
	}
	if err != nil {
		return TokenPair{}, err
	}
	return issuePair(ctx, s.issuer, user, domain.SessionOf(r.family), claims, r.token, r.expiresAt)
}

// refreshRotation is the rotation of refresh tokens with reuse detection,
// shared by userd's own refresh and the OpenID provider's.
type refreshRotation struct {
	core
	tokens      ports.RefreshTokenStore
	codec       ports.RefreshTokenCodec
	tx          ports.Transactor
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	refreshTTL  time.Duration
	reuseGrace  time.Duration
}

// rotated is a refresh token's successor: the session it belongs to, the
// token and its end; repeat tells a repeat within the grace window.
type rotated struct {
	family    domain.RefreshFamily
	token     string
	expiresAt time.Time
	repeat    bool
}

// rotate exchanges token for its successor. admits decides, before
// anything is written, whether the caller may use the token's session at
// all: one it does not admit is domain.ErrRefreshTokenInvalid, as an
// unknown token, and is neither rotated nor burnt (another client cannot
// end a session by presenting its token). prepare runs once the token
// may be exchanged, before the rotation is written, outside any
// transaction (the claims hook): its error is rotate's, and leaves the
// token as it was.
func (r *refreshRotation) rotate(ctx context.Context, token string, admits func(domain.RefreshFamily) bool,
	prepare func(context.Context, domain.RefreshFamily) error) (rotated, error) {
	if !r.codec.WellFormed(token) {
		return rotated{}, domain.ErrRefreshTokenInvalid
	}
	ex := r.exchangeOf(token)
	rec, family, err := r.tokens.Lookup(ctx, ex.hash)
	if err != nil {
		return rotated{}, err
	}
	return r.judge(ctx, ex, rec, family, r.clock.Now(), admits, prepare)
}

// exchange is what a refresh token is exchanged by: its hash, its
// successor and the successor's hash, each computed once.
type exchange struct{ hash, successor, successorHash string }

func (r *refreshRotation) exchangeOf(token string) exchange {
	successor := r.codec.Successor(token)
	return exchange{hash: r.codec.Hash(token), successor: successor, successorHash: r.codec.Hash(successor)}
}

// ownSession admits the sessions of the app's own, not an OpenID client's.
func ownSession(f domain.RefreshFamily) bool { return !f.ForClient() }

// rotateOwn is rotate for a token of a session of the app's own
// (ownSession) when prepare may run after the rotation (no claims hook
// to ask before it): the store looks the token up and rotates it in one
// step (ports.RefreshTokenStore.RotateOwn). A token it did not rotate
// (used, expired, ended, a client's, or taken by a concurrent request) is
// judged from what it read, as rotate judges a token it looked up.
func (r *refreshRotation) rotateOwn(ctx context.Context, token string,
	prepare func(context.Context, domain.RefreshFamily) error) (rotated, error) {
	if !r.codec.WellFormed(token) {
		return rotated{}, domain.ErrRefreshTokenInvalid
	}
	ex, now := r.exchangeOf(token), r.clock.Now()
	next := domain.RefreshToken{Hash: ex.successorHash, IssuedAt: now, ExpiresAt: now.Add(r.refreshTTL)}
	rec, family, done, err := r.tokens.RotateOwn(ctx, ex.hash, now, next)
	if err != nil {
		return rotated{}, err
	}
	if !done {
		return r.judge(ctx, ex, rec, family, now, ownSession, prepare)
	}
	// The store checked what judge would (domain.RefreshToken.RotatableOwn).
	// prepare failing now (the account disabled meanwhile, or the store
	// failing to read it) leaves the token used, as an answer lost on its
	// way does: a retry within the grace window gets the same successor.
	if err := prepare(ctx, family); err != nil {
		return rotated{}, err
	}
	return rotated{family: family, token: ex.successor, expiresAt: minTime(next.ExpiresAt, family.ExpiresAt)}, nil
}

// judge decides what a token read as rec, in family, is worth at now:
// rotate's steps after its lookup.
func (r *refreshRotation) judge(ctx context.Context, ex exchange, rec domain.RefreshToken, family domain.RefreshFamily,
	now time.Time, admits func(domain.RefreshFamily) bool, prepare func(context.Context, domain.RefreshFamily) error) (rotated, error) {
	if !admits(family) || !family.Active(now) {
		return rotated{}, domain.ErrRefreshTokenInvalid
	}
	// A used token is judged as a repeat whatever its own expiry: one that
	// was rotated and has since expired is stolen as surely as one that
	// has not, and its family lives on in the successor. Only an unused
	// token is merely too old.
	if rec.UsedAt == nil && !now.Before(rec.ExpiresAt) {
		return rotated{}, domain.ErrRefreshTokenInvalid
	}
	prepared := false
	if rec.UsedAt == nil {
		if err := prepare(ctx, family); err != nil {
			return rotated{}, err
		}
		prepared = true
		next := domain.RefreshToken{
			Hash:      ex.successorHash,
			FamilyID:  family.ID,
			UserID:    family.UserID,
			IssuedAt:  now,
			ExpiresAt: minTime(now.Add(r.refreshTTL), family.ExpiresAt),
		}
		consumed, err := r.tokens.Rotate(ctx, ex.hash, now, next)
		if errors.Is(err, domain.ErrRefreshFamilyRevoked) || errors.Is(err, domain.ErrRefreshFamilyLapsed) {
			return rotated{}, domain.ErrRefreshTokenInvalid
		}
		if err != nil {
			return rotated{}, fmt.Errorf("rotate refresh token: %w", err)
		}
		if consumed {
			return rotated{family: family, token: ex.successor, expiresAt: next.ExpiresAt}, nil
		}
		// A concurrent request consumed it first: judge it as a repeat.
		if rec, family, err = r.tokens.Lookup(ctx, ex.hash); err != nil {
			return rotated{}, err
		}
	}
	// A used token: success from here on is a repeat within the grace window.
	res, err := r.repeat(ctx, rec, family, ex.successor, ex.successorHash, now)
	res.repeat = true
	if err == nil && !prepared {
		err = prepare(ctx, res.family)
	}
	return res, err
}

// repeat answers a refresh token that was used already: within the grace
// window, and while its successor is unused, with that same successor;
// otherwise by revoking the family.
func (r *refreshRotation) repeat(ctx context.Context, rec domain.RefreshToken, family domain.RefreshFamily,
	successor, successorHash string, now time.Time) (rotated, error) {
	if r.reuseGrace > 0 && rec.UsedAt != nil && family.Active(now) &&
		now.Sub(*rec.UsedAt) <= r.reuseGrace &&
		hmac.Equal([]byte(rec.SuccessorHash), []byte(successorHash)) {
		next, nextFamily, err := r.tokens.Lookup(ctx, successorHash)
		if err != nil && !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			return rotated{}, err
		}
		if err == nil && next.UsedAt == nil && nextFamily.Active(now) {
			return rotated{family: nextFamily, token: successor, expiresAt: next.ExpiresAt}, nil
		}
	}
	if err := r.revokeFamily(ctx, family, now, domain.EndedByReuse); err != nil {
		return rotated{}, err
	}
	r.sessionEnds.ended(ctx, family.ID)
	r.log.LogAttrs(ctx, slog.LevelWarn, "refresh token reuse detected; session revoked",
		slog.String("user_id", family.UserID.String()), slog.String("family_id", family.ID))
	r.events.note(ctx, domain.RefreshReuseDetectedEvent(family.UserID, family.ID))
	if family.RevokedAt == nil {
		r.events.note(ctx, domain.SessionRevokedEvent("", family.UserID, domain.EndedByReuse, family.ID))
	}
	return rotated{}, domain.ErrRefreshTokenReused
}

// refreshedUser is the user of a session being refreshed: one deleted or
// disabled since makes the token invalid. It is read as a signed-in
// caller's is, through the node's account cache (readCaller): what a
// refresh must refuse at once does not rest on it, since every change
// that must end a session (a disabled account, new profiles, email or
// password) revokes the session's family in its own transaction, which
// the token's lookup reads from the store; and a deleted account's
// families go with it. What the cache can hold back, for up to a second
// after a change made on another node, is the rest of the account the
// new token and the claims hook see (its name, its metadata), as a read
// in flight during the change would.
//
// Both refreshes (this one and the provider's refresh_token grant) read
// their account with it.
func refreshedUser(ctx context.Context, users ports.UserRepository, id domain.UserID) (domain.User, error) {
	user, err := readCaller(ctx, users, id, func(u domain.User) bool { return !u.Disabled })
	if errors.Is(err, domain.ErrUserNotFound) || (err == nil && user.Disabled) {
		return domain.User{}, domain.ErrRefreshTokenInvalid
	}
	return user, err
}

// Logout ends the session of the refresh token. An unknown or malformed
// token is not an error: the caller's goal, no live session, holds.
func (s *AuthService) Logout(ctx context.Context, token string) error {
	if !s.codec.WellFormed(token) {
		return nil
	}
	_, family, err := s.tokens.Lookup(ctx, s.codec.Hash(token))
	if errors.Is(err, domain.ErrRefreshTokenInvalid) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.refresh.revokeFamily(ctx, family, s.clock.Now(), domain.EndedByLogout); err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, family.ID)
	if family.RevokedAt == nil {
		// Whoever holds the refresh token acts as its user.
		s.events.note(ctx, domain.SessionRevokedEvent(family.UserID, family.UserID, domain.EndedByLogout, family.ID))
	}
	return nil
}

// revokeFamily ends one session, and queues session.revoked with it when
// it was live.
func (r *refreshRotation) revokeFamily(ctx context.Context, family domain.RefreshFamily, now time.Time, why domain.SessionEnd) error {
	revoke := func(ctx context.Context) error {
		if err := r.tokens.RevokeFamily(ctx, family.ID, now); err != nil {
			return fmt.Errorf("revoke family: %w", err)
		}
		if family.RevokedAt != nil {
			return nil
		}
		return r.webhooks.sessionRevoked(ctx, family.UserID, family.ID, string(why))
	}
	if family.RevokedAt == nil && r.webhooks.wants(domain.WebhookSessionRevoked) {
		return r.tx.WithinTx(ctx, revoke)
	}
	return revoke(ctx)
}

func newFamilyID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
