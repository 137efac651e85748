package application

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/userd/userd/domain"
)

// ClientForToken identifies the client of a request to the token,
// introspection or revocation endpoint: by its secret when one was sent
// (secretSent, by Basic or in the form), or as a public client by its id
// alone. A wrong secret, an unknown client, and a confidential one
// without its secret are domain.ErrInvalidClientCredentials.
func (s *ProviderService) ClientForToken(ctx context.Context, clientID, secret string, secretSent bool) (domain.OAuthClient, error) {
	if secretSent {
		return s.clients.AuthenticateClient(ctx, clientID, secret)
	}
	c, err := s.clients.Client(ctx, clientID)
	switch {
	case errors.Is(err, domain.ErrOAuthClientNotFound):
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	case err != nil:
		return domain.OAuthClient{}, err
	case !c.IsPublic():
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	}
	return c, nil
}

// invalidGrant is the token endpoint's refusal of a code or refresh token
// that is not good (RFC 6749 §5.2), described in one way whatever the
// cause: unknown, expired, used, another client's.
func invalidGrant(desc string) error { return domain.NewOAuthError(domain.OAuthInvalidGrant, desc) }

// ExchangeCode answers grant_type=authorization_code. Refusals are
// *domain.OAuthError (invalid_grant, invalid_request, unauthorized_client).
// A code presented a second time ends the session its first exchange
// opened (RFC 6749 §4.1.2); when the first exchange is still under way,
// it is refused as well (replayedMeanwhile).
func (s *ProviderService) ExchangeCode(ctx context.Context, client domain.OAuthClient, code, redirectURI, verifier string) (ProviderTokens, error) {
	if !client.HasGrant(domain.GrantAuthorizationCode) {
		return ProviderTokens{}, domain.NewOAuthError(domain.OAuthUnauthorizedClient, "the client may not use this grant")
	}
	if code == "" || redirectURI == "" || verifier == "" {
		return ProviderTokens{}, domain.NewOAuthError(domain.OAuthInvalidRequest, "code, redirect_uri and code_verifier are required")
	}
	now := s.clock.Now()
	sid, codeHash := newFamilyID(), domain.HashAuthCode(code)
	req, err := s.requests.TakeCode(ctx, codeHash, sid, now)
	switch {
	case errors.Is(err, domain.ErrAuthCodeReused):
		if req.ClientID == client.ID && req.IssuedSessionID != "" {
			// The request goes first: a first exchange that has not
			// opened its session yet (endSession finds none to end) finds
			// its request gone once it has, and ends the session itself
			// (replayedMeanwhile).
			if err := s.requests.DeleteAuthRequest(ctx, req.ID); err != nil {
				return ProviderTokens{}, err
			}
			if err := s.endSession(ctx, req.UserID, req.IssuedSessionID, domain.EndedByCodeReuse); err != nil {
				return ProviderTokens{}, err
			}
		}
		return ProviderTokens{}, invalidGrant("the code is invalid, expired or used")
	case errors.Is(err, domain.ErrAuthCodeInvalid):
		return ProviderTokens{}, invalidGrant("the code is invalid, expired or used")
	case err != nil:
		return ProviderTokens{}, err
	}
	if req.ClientID != client.ID || req.RedirectURI != redirectURI {
		return ProviderTokens{}, invalidGrant("the code was issued to another client or redirect_uri")
	}
	if domain.VerifyPKCE(req.CodeChallenge, verifier) != nil {
		return ProviderTokens{}, invalidGrant("the code_verifier does not match the code_challenge")
	}
	user, err := s.activeUser(ctx, req.UserID)
	if err != nil {
		return ProviderTokens{}, err
	}
	// The client's scopes may have shrunk since the request.
	scopes := slices.DeleteFunc(slices.Clone(req.Scopes), func(sc domain.OAuthScope) bool { return !client.AllowsScope(sc) })
	offline := client.HasGrant(domain.GrantRefreshToken) && slices.Contains(scopes, domain.ScopeOfflineAccess)
	// Asked before the session opens: a refusal opens none (the code is
	// used all the same, as a code is once).
	claims, err := s.hookClaims(ctx, domain.ClaimsGrantAuthorizationCode, client, user, sid, req.AMR, scopes)
	if err != nil {
		return ProviderTokens{}, err
	}
	family, refresh, err := s.openClientSession(ctx, client, user, req, scopes, sid, offline, now)
	if err != nil {
		return ProviderTokens{}, err
	}
	if err := s.replayedMeanwhile(ctx, codeHash, user.ID, sid, now); err != nil {
		return ProviderTokens{}, err
	}
	out, err := s.userTokens(ctx, client, user, family, scopes, req.Nonce, now, claims)
	if offline {
		out.RefreshToken = refresh
	}
	return out, err
}

// replayedMeanwhile ends the session sid, just opened by the exchange of
// the code with the hash, and refuses the exchange, when the code was
// presented again while it was being exchanged: that second use deleted
// the request before it looked for the session to end, and may have found
// none yet. Either the second use's look comes after the session was
// opened and ends it, or its deletion came before the look here, which
// then sees the request gone; the code cannot slip between the two.
func (s *ProviderService) replayedMeanwhile(ctx context.Context, codeHash string, user domain.UserID, sid string, now time.Time) error {
	// Taking the code again changes nothing of a used code: it tells
	// whether its request is still there.
	_, err := s.requests.TakeCode(ctx, codeHash, sid, now)
	switch {
	case errors.Is(err, domain.ErrAuthCodeReused):
		return nil
	case errors.Is(err, domain.ErrAuthCodeInvalid):
		if err := s.endSession(ctx, user, sid, domain.EndedByCodeReuse); err != nil {
			return err
		}
		return invalidGrant("the code is invalid, expired or used")
	case err != nil:
		return err
	}
	return fmt.Errorf("exchange code: the code was unused after its exchange took it")
}

// activeUser returns the user a token is about to be issued for: one
// deleted or disabled since is invalid_grant.
func (s *ProviderService) activeUser(ctx context.Context, id domain.UserID) (domain.User, error) {
	u, err := s.users.ByID(ctx, id)
	if errors.Is(err, domain.ErrUserNotFound) || (err == nil && u.Disabled) {
		return domain.User{}, invalidGrant("the user cannot sign in")
	}
	return u, err
}

// openClientSession opens the session a code's exchange grants the
// client: a refresh family with the client and scopes, signed in when and
// how the browser's session was. Without offline access its first token
// is never handed out, and it lasts as long as its access token, so that
// the sessions list shows it while the token lives and it can be ended.
func (s *ProviderService) openClientSession(ctx context.Context, client domain.OAuthClient, user domain.User,
	req domain.AuthRequest, scopes []domain.OAuthScope, sid string, offline bool, now time.Time) (domain.RefreshFamily, string, error) {
	meta := domain.RequestMetaFrom(ctx)
	lifetime := s.oauthTokens.AccessTokenTTL()
	if offline {
		lifetime = s.refreshFamilyTTL
	}
	family := domain.RefreshFamily{ID: sid, UserID: user.ID, CreatedAt: now, ExpiresAt: now.Add(lifetime),
		AMR: req.AMR.Clone(), LastUsedAt: now, UserAgent: domain.SessionUserAgent(meta.UserAgent), IP: meta.ClientIP,
		ClientID: client.ID, Scopes: slices.Clone(scopes), AuthTime: req.AuthTime}
	token := s.codec.New()
	rec := domain.RefreshToken{Hash: s.codec.Hash(token), FamilyID: sid, UserID: user.ID, IssuedAt: now,
		ExpiresAt: minTime(now.Add(s.refreshTTL), family.ExpiresAt)}
	create := func(ctx context.Context) error {
		if err := s.tokens.CreateFamily(ctx, family, rec); err != nil {
			return fmt.Errorf("create client session: %w", err)
		}
		return s.webhooks.emit(ctx, domain.WebhookSessionCreated, user.ID, map[string]any{"sessionId": sid,
			"amr": []string(family.AMR), "clientId": client.ID.String()})
	}
	if err := s.webhooks.inTxFor(ctx, domain.WebhookSessionCreated, create); err != nil {
		return domain.RefreshFamily{}, "", err
	}
	return family, token, nil
}

// userTokens signs the access token of a user's session granted to the
// client, and its ID token when openid is among the scopes; both carry
// the hook's claims.
func (s *ProviderService) userTokens(ctx context.Context, client domain.OAuthClient, user domain.User,
	family domain.RefreshFamily, scopes []domain.OAuthScope, nonce string, now time.Time, claims domain.HookClaims) (ProviderTokens, error) {
	ttl := s.oauthTokens.AccessTokenTTL()
	access, err := s.oauthTokens.IssueAccessToken(ctx, domain.OAuthAccessClaims{Subject: user.ID.String(),
		ClientID: client.ID, Scopes: scopes, SessionID: family.ID, AuthTime: family.SignedInAt(), AMR: family.AMR,
		ID: newTokenID(), IssuedAt: now, ExpiresAt: now.Add(ttl), Extra: claims})
	if err != nil {
		return ProviderTokens{}, fmt.Errorf("issue access token: %w", err)
	}
	out := ProviderTokens{AccessToken: access, ExpiresIn: ttl, Scopes: scopes}
	if !slices.Contains(scopes, domain.ScopeOpenID) {
		return out, nil
	}
	out.IDToken, err = s.oauthTokens.IssueIDToken(ctx, domain.IDTokenClaims{Subject: user.ID, ClientID: client.ID,
		Nonce: nonce, SessionID: family.ID, AuthTime: family.SignedInAt(), AMR: family.AMR, IssuedAt: now,
		ExpiresAt: now.Add(min(domain.IDTokenTTL, ttl)), User: domain.ClaimsOf(user, scopes), Extra: claims},
		string(client.IDTokenSigningAlg), access)
	if err != nil {
		return ProviderTokens{}, fmt.Errorf("issue ID token: %w", err)
	}
	return out, nil
}

// Refresh answers grant_type=refresh_token: scopes, when not empty, narrow
// the session's for this answer only. A token of another client, or of
// one of userd's own sessions, is invalid_grant and stays untouched; a
// used one presented again ends its session (reuse detection, as userd's
// own refresh). Refusals are *domain.OAuthError.
func (s *ProviderService) Refresh(ctx context.Context, client domain.OAuthClient, refreshToken string, scopes []string) (ProviderTokens, error) {
	if !client.HasGrant(domain.GrantRefreshToken) {
		return ProviderTokens{}, domain.NewOAuthError(domain.OAuthUnauthorizedClient, "the client may not use this grant")
	}
	if refreshToken == "" {
		return ProviderTokens{}, domain.NewOAuthError(domain.OAuthInvalidRequest, "refresh_token is required")
	}
	// The scopes asked are judged against the session's, and the hook
	// asked, before the token is rotated: a refusal leaves the token as
	// it was, for the retry.
	var (
		granted  []domain.OAuthScope
		scopeErr error
		user     domain.User
		claims   domain.HookClaims
	)
	r, err := s.refresh.rotate(ctx, refreshToken, func(f domain.RefreshFamily) bool {
		if f.ClientID != client.ID {
			return false
		}
		granted = f.Scopes
		if len(scopes) > 0 {
			granted, scopeErr = domain.ParseOAuthScopes(scopes, func(sc domain.OAuthScope) bool { return slices.Contains(f.Scopes, sc) })
		}
		return scopeErr == nil
	}, func(ctx context.Context, f domain.RefreshFamily) error {
		var err error
		user, err = refreshedUser(ctx, s.users, f.UserID)
		if errors.Is(err, domain.ErrRefreshTokenInvalid) {
			return invalidGrant("the user cannot sign in")
		}
		if err != nil {
			return err
		}
		claims, err = s.hookClaims(ctx, domain.ClaimsGrantRefreshToken, client, user, f.ID, f.AMR, granted)
		return err
	})
	if scopeErr != nil {
		return ProviderTokens{}, scopeErr
	}
	if errors.Is(err, domain.ErrRefreshTokenInvalid) || errors.Is(err, domain.ErrRefreshTokenReused) {
		return ProviderTokens{}, invalidGrant("the refresh token is invalid, expired or revoked")
	}
	if err != nil {
		return ProviderTokens{}, err
	}
	out, err := s.userTokens(ctx, client, user, r.family, granted, "", s.clock.Now(), claims)
	out.RefreshToken = r.token
	return out, err
}

// ClientCredentials answers grant_type=client_credentials: an access
// token whose subject is the client itself, with the scopes asked of the
// client's (none by default), never openid or offline_access, which speak
// of a user. Refusals are *domain.OAuthError.
func (s *ProviderService) ClientCredentials(ctx context.Context, client domain.OAuthClient, scopes []string) (ProviderTokens, error) {
	if !client.HasGrant(domain.GrantClientCredentials) || client.IsPublic() {
		return ProviderTokens{}, domain.NewOAuthError(domain.OAuthUnauthorizedClient, "the client may not use this grant")
	}
	asked, err := domain.ParseOAuthScopes(scopes, func(sc domain.OAuthScope) bool {
		return client.AllowsScope(sc) && sc != domain.ScopeOpenID && sc != domain.ScopeOfflineAccess
	})
	if err != nil {
		return ProviderTokens{}, err
	}
	claims, err := s.hook.forClient(ctx, client.ID, asked)
	if err != nil {
		return ProviderTokens{}, tokenEndpointError(err)
	}
	now, ttl := s.clock.Now(), s.oauthTokens.AccessTokenTTL()
	access, err := s.oauthTokens.IssueAccessToken(ctx, domain.OAuthAccessClaims{Subject: client.ID.String(),
		ClientID: client.ID, Scopes: asked, ID: newTokenID(), IssuedAt: now, ExpiresAt: now.Add(ttl), Extra: claims})
	if err != nil {
		return ProviderTokens{}, fmt.Errorf("issue access token: %w", err)
	}
	return ProviderTokens{AccessToken: access, ExpiresIn: ttl, Scopes: asked}, nil
}

// hookClaims asks the claims hook for the claims of the tokens of a
// user's session granted to client; its refusals are the token
// endpoint's (tokenEndpointError).
func (s *ProviderService) hookClaims(ctx context.Context, grant string, client domain.OAuthClient, user domain.User,
	sid string, amr domain.AMR, scopes []domain.OAuthScope) (domain.HookClaims, error) {
	claims, err := s.hook.forUser(ctx, grant, user, sid, amr, client.ID, scopes)
	return claims, tokenEndpointError(err)
}

// tokenEndpointError is the token endpoint's answer (RFC 6749 §5.2) to
// the hook's: a refusal is invalid_grant with the hook's message, the
// grant being one the hook will not have tokens made of; a wrong answer
// a server_error; no answer a temporarily_unavailable (a 503 there, as
// the API's unavailable). docs/claims.md says so.
func tokenEndpointError(err error) error {
	if refused, ok := errors.AsType[*domain.SignInRefusedError](err); ok {
		return domain.NewOAuthError(domain.OAuthInvalidGrant, refused.Message)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, domain.ErrHookFailed):
		return domain.NewOAuthError(domain.OAuthServerError, "the claims of the token could not be made")
	case errors.Is(err, domain.ErrHookUnavailable):
		return domain.NewOAuthError(domain.OAuthTemporarilyUnavailable, "the service is temporarily unavailable; retry shortly")
	}
	return err
}

// newTokenID returns a fresh jti.
func newTokenID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
