package application

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// PersonalTokenService makes, lists and revokes the users' personal
// access tokens (contract-identity.md, section 3), and finds the caller of
// one (AuthService.Authenticate asks it).
type PersonalTokenService struct {
	core
	personalTokenPorts
}

// personalTokenPorts are what the PersonalTokenService uses.
type personalTokenPorts struct {
	users    ports.UserRepository
	tokens   ports.PersonalTokenStore
	webhooks *webhookQueue
}

// CreateTokenInput is a request for a token: a name, its scopes, and its
// lifetime in days (nil: domain.DefaultPersonalTokenDays).
type CreateTokenInput struct {
	Name          string
	Scopes        []string
	ExpiresInDays *int
}

// CreatedToken is a token just made: the token itself, shown this once,
// and what is stored of it.
type CreatedToken struct {
	Token string
	domain.PersonalToken
}

// Create makes a personal access token for the account rawID: only its
// own user may, in a session (a token makes no token). The order of the
// contract: the caller (401), the id (400), the form (400), the caller's
// right (403), the limit (409 domain.ErrTokenLimit).
func (s *PersonalTokenService) Create(ctx context.Context, actor *domain.Principal, rawID string, in CreateTokenInput) (CreatedToken, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return CreatedToken{}, err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return CreatedToken{}, err
	}
	name, scopes, days, err := checkTokenInput(in)
	if err != nil {
		return CreatedToken{}, err
	}
	if err := actor.RequireInteractive(); err != nil {
		return CreatedToken{}, err
	}
	if id != actor.UserID {
		return CreatedToken{}, domain.ErrForbidden
	}
	now := s.clock.Now()
	secret := domain.NewPersonalTokenSecret()
	t := domain.PersonalToken{ID: domain.NewPersonalTokenID(), UserID: id, Name: name, Scopes: scopes,
		Hash: domain.HashPersonalToken(secret), Prefix: domain.PersonalTokenPrefixOf(secret),
		CreatedAt: now, ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour)}
	err = s.webhooks.inTxFor(ctx, domain.WebhookTokenCreated, func(ctx context.Context) error {
		if err := s.tokens.CreateToken(ctx, t, domain.MaxLivePersonalTokens); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookTokenCreated, id, map[string]any{"tokenId": string(t.ID),
			"scopes": scopeStrings(scopes)})
	})
	if err != nil {
		return CreatedToken{}, err
	}
	s.events.note(ctx, domain.TokenCreatedEvent(id, t))
	s.log.LogAttrs(ctx, slog.LevelInfo, "personal access token created", slog.String("user_id", id.String()),
		slog.String("token_id", string(t.ID)))
	return CreatedToken{Token: secret, PersonalToken: t}, nil
}

// checkTokenInput judges a request's form, every field at once.
func checkTokenInput(in CreateTokenInput) (string, []domain.TokenScope, int, error) {
	var verr domain.ValidationError
	name := strings.TrimSpace(in.Name)
	switch n := utf8.RuneCountInString(name); {
	case !utf8.ValidString(name):
		verr.Add(FieldName, "must be valid UTF-8")
	case n == 0:
		verr.Add(FieldName, "must not be empty")
	case n > domain.PersonalTokenNameMaxLen:
		verr.Add(FieldName, "must be at most 100 characters")
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
		verr.Add(FieldName, "must not contain control or invisible characters")
	}
	scopes, msg := domain.ParseTokenScopes(in.Scopes)
	if msg != "" {
		verr.Add(FieldScopes, msg)
	}
	days := domain.DefaultPersonalTokenDays
	if in.ExpiresInDays != nil {
		days = *in.ExpiresInDays
		if days < domain.MinPersonalTokenDays || days > domain.MaxPersonalTokenDays {
			verr.Add(FieldExpiresInDays, "must be between 1 and 365")
		}
	}
	return name, scopes, days, verr.Err()
}

// The fields of a token's request, as the API names them.
const (
	FieldScopes        = "scopes"
	FieldExpiresInDays = "expiresInDays"
)

// List returns the live tokens of the account rawID, newest first: for
// its user, or an admin.
func (s *PersonalTokenService) List(ctx context.Context, actor *domain.Principal, rawID string) ([]domain.PersonalToken, error) {
	id, err := s.tokenOwner(ctx, actor, rawID)
	if err != nil {
		return nil, err
	}
	return s.tokens.Tokens(ctx, id, s.clock.Now())
}

// Revoke ends the token rawTokenID of the account rawID, for its user or
// an admin, in a session: domain.ErrPersonalTokenNotFound when the
// account has no such live token.
func (s *PersonalTokenService) Revoke(ctx context.Context, actor *domain.Principal, rawID, rawTokenID string) error {
	id, err := s.tokenOwner(ctx, actor, rawID)
	if err != nil {
		return err
	}
	if err := actor.RequireInteractive(); err != nil {
		return err
	}
	tid, ok := domain.ParsePersonalTokenID(rawTokenID)
	if !ok {
		return domain.ErrPersonalTokenNotFound
	}
	return s.revoke(ctx, actor.UserID, id, tid)
}

// RevokeAsOperator ends the token rawTokenID of the account rawID for an
// operator's command (`userd tokens revoke`), with no actor.
func (s *PersonalTokenService) RevokeAsOperator(ctx context.Context, rawID, rawTokenID string) error {
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return err
	}
	tid, ok := domain.ParsePersonalTokenID(rawTokenID)
	if !ok {
		return domain.ErrPersonalTokenNotFound
	}
	return s.revoke(ctx, "", id, tid)
}

// ListAsOperator lists the live tokens of the account rawID for an
// operator's command (`userd tokens list`).
func (s *PersonalTokenService) ListAsOperator(ctx context.Context, rawID string) ([]domain.PersonalToken, error) {
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return nil, err
	}
	if _, err := s.users.ByID(ctx, id); err != nil {
		return nil, err
	}
	return s.tokens.Tokens(ctx, id, s.clock.Now())
}

func (s *PersonalTokenService) revoke(ctx context.Context, actor, user domain.UserID, tid domain.PersonalTokenID) error {
	err := s.webhooks.inTxFor(ctx, domain.WebhookTokenRevoked, func(ctx context.Context) error {
		if err := s.tokens.RevokeToken(ctx, user, tid, s.clock.Now()); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookTokenRevoked, user, map[string]any{"tokenId": string(tid)})
	})
	if err != nil {
		return err
	}
	s.events.note(ctx, domain.TokenRevokedEvent(actor, user, tid))
	s.log.LogAttrs(ctx, slog.LevelInfo, "personal access token revoked", slog.String("user_id", user.String()),
		slog.String("token_id", string(tid)))
	return nil
}

// tokenOwner runs the checks of the contract's order for the account
// rawID: the caller (401), the id (400), the caller's right (403: its
// user or an admin), the account's existence (404).
func (s *PersonalTokenService) tokenOwner(ctx context.Context, actor *domain.Principal, rawID string) (domain.UserID, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return "", err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return "", err
	}
	if err := actor.CanManageTokens(id); err != nil {
		return "", err
	}
	if id != actor.UserID {
		if _, err := s.users.ByID(ctx, id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// authenticate finds the caller of a personal access token: its form and
// checksum first (a token that fails them is refused before any store
// is asked), then the token and its user in one read; a token revoked,
// expired, unknown, or of a disabled user is domain.ErrInvalidToken. A
// use is recorded at most once a minute.
func (s *PersonalTokenService) authenticate(ctx context.Context, bearer string) (*domain.Principal, error) {
	if !domain.WellFormedPersonalToken(bearer) {
		return nil, domain.ErrInvalidToken
	}
	t, u, err := s.tokens.TokenByHash(ctx, domain.HashPersonalToken(bearer))
	if errors.Is(err, domain.ErrPersonalTokenNotFound) {
		return nil, domain.ErrInvalidToken
	}
	if err != nil {
		return nil, err
	}
	now := s.clock.Now()
	if !t.Live(now) || u.Disabled {
		return nil, domain.ErrInvalidToken
	}
	if now.Sub(t.LastUsedAt) >= domain.PersonalTokenTouchInterval {
		if err := s.tokens.TouchToken(ctx, t.ID, now); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "personal access token use not recorded", slog.String("error", err.Error()))
		}
	}
	return &domain.Principal{UserID: u.ID, Profiles: slices.Clone(u.Profiles),
		Token: &domain.TokenGrant{ID: t.ID, Scopes: t.Scopes, Account: u}}, nil
}

// scopeStrings is scopes as strings.
func scopeStrings(scopes []domain.TokenScope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}
