package application

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/userd/userd/domain"
)

// UserInfo answers /oauth2/userinfo for an access token of the provider
// issued to a user: the claims its scopes reveal, read now. A bad,
// expired or revoked token, one of client_credentials, or one whose user
// is disabled or deleted is domain.ErrInvalidToken.
func (s *ProviderService) UserInfo(ctx context.Context, accessToken string) (UserInfo, error) {
	c, u, err := s.liveAccessToken(ctx, accessToken)
	if err != nil {
		return UserInfo{}, err
	}
	if !c.ForUser() {
		return UserInfo{}, domain.ErrInvalidToken
	}
	return UserInfo{Subject: u.ID, Claims: domain.ClaimsOf(u, c.Scopes)}, nil
}

// liveAccessToken checks an access token of the provider: its signature
// and times, its session not ended, and its user (for a user's token)
// still there and enabled. Anything else is domain.ErrInvalidToken.
func (s *ProviderService) liveAccessToken(ctx context.Context, token string) (domain.OAuthAccessClaims, domain.User, error) {
	c, err := s.oauthTokens.VerifyAccessToken(ctx, token)
	if err != nil {
		return domain.OAuthAccessClaims{}, domain.User{}, domain.ErrInvalidToken
	}
	if !c.ForUser() {
		return c, domain.User{}, nil
	}
	if s.sessionEnds.has(c.SessionID) {
		return domain.OAuthAccessClaims{}, domain.User{}, domain.ErrInvalidToken
	}
	id, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return domain.OAuthAccessClaims{}, domain.User{}, domain.ErrInvalidToken
	}
	u, err := s.users.ByID(ctx, id)
	if errors.Is(err, domain.ErrUserNotFound) || (err == nil && u.Disabled) {
		return domain.OAuthAccessClaims{}, domain.User{}, domain.ErrInvalidToken
	}
	return c, u, err
}

// Introspect answers /oauth2/introspect (RFC 7662) for a confidential
// client: what a live access or refresh token of the provider says, and
// Active false for anything else.
func (s *ProviderService) Introspect(ctx context.Context, client domain.OAuthClient, token string) (Introspection, error) {
	if client.IsPublic() {
		return Introspection{}, domain.ErrInvalidClientCredentials
	}
	if c, _, err := s.liveAccessToken(ctx, token); err == nil {
		return Introspection{Active: true, Subject: c.Subject, ClientID: c.ClientID, Scopes: c.Scopes,
			IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt, TokenType: TokenTypeAccess, SessionID: c.SessionID}, nil
	} else if !errors.Is(err, domain.ErrInvalidToken) {
		return Introspection{}, err
	}
	if !s.codec.WellFormed(token) {
		return Introspection{}, nil
	}
	rec, f, err := s.tokens.Lookup(ctx, s.codec.Hash(token))
	if errors.Is(err, domain.ErrRefreshTokenInvalid) {
		return Introspection{}, nil
	}
	if err != nil {
		return Introspection{}, err
	}
	now := s.clock.Now()
	if !f.ForClient() || !f.Active(now) || rec.UsedAt != nil || !now.Before(rec.ExpiresAt) {
		return Introspection{}, nil
	}
	if _, err := s.activeUser(ctx, f.UserID); err != nil {
		var oerr *domain.OAuthError
		if errors.As(err, &oerr) {
			return Introspection{}, nil
		}
		return Introspection{}, err
	}
	return Introspection{Active: true, Subject: f.UserID.String(), ClientID: f.ClientID, Scopes: f.Scopes,
		IssuedAt: rec.IssuedAt, ExpiresAt: rec.ExpiresAt, TokenType: TokenTypeRefresh, SessionID: f.ID}, nil
}

// Revoke answers /oauth2/revoke (RFC 7009): a refresh token of the
// client ends its session, and so does an access token of one of the
// client's sessions, on every node. A token of another client, an
// unknown one, or one of client_credentials (which has no session, and
// lives minutes) is no error and ends nothing.
func (s *ProviderService) Revoke(ctx context.Context, client domain.OAuthClient, token string) error {
	if c, err := s.oauthTokens.VerifyAccessToken(ctx, token); err == nil {
		if c.ClientID != client.ID || !c.ForUser() {
			return nil
		}
		id, err := domain.ParseUserID(c.Subject)
		if err != nil {
			return nil
		}
		return s.endSession(ctx, id, c.SessionID, domain.EndedByRevocation)
	}
	if !s.codec.WellFormed(token) {
		return nil
	}
	_, f, err := s.tokens.Lookup(ctx, s.codec.Hash(token))
	if errors.Is(err, domain.ErrRefreshTokenInvalid) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.ClientID != client.ID {
		return nil
	}
	return s.endSession(ctx, f.UserID, f.ID, domain.EndedByRevocation)
}

// endSession ends the user's session sid for why, on every node, with
// its event and webhook when it was live.
func (s *ProviderService) endSession(ctx context.Context, user domain.UserID, sid string, why domain.SessionEnd) error {
	f, err := s.tokens.Family(ctx, sid)
	if errors.Is(err, domain.ErrSessionNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.UserID != user {
		return nil
	}
	if err := s.refresh.revokeFamily(ctx, f, s.clock.Now(), why); err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, f.ID)
	if f.RevokedAt == nil {
		s.events.note(ctx, domain.SessionRevokedEvent(user, user, why, f.ID))
	}
	return nil
}

// EndSession ends the browser's session (RP-initiated logout) and the
// session of the id_token_hint, and says where to go. A
// post_logout_redirect_uri that is not the client's, one without a client
// to check it against, an id_token_hint that is not the provider's, or a
// client_id other than the hint's is a *domain.OAuthError
// invalid_request, which the caller shows as a page.
func (s *ProviderService) EndSession(ctx context.Context, in EndSessionInput) (EndSessionResult, error) {
	bad := func(desc string) (EndSessionResult, error) {
		return EndSessionResult{}, domain.NewOAuthError(domain.OAuthInvalidRequest, desc)
	}
	clientID := in.ClientID
	var hint *domain.IDTokenClaims
	if in.IDTokenHint != "" {
		c, err := s.oauthTokens.VerifyIDTokenHint(ctx, in.IDTokenHint)
		if err != nil {
			return bad("the id_token_hint is not an ID token of this provider")
		}
		if clientID != "" && clientID != c.ClientID.String() {
			return bad("client_id is not the id_token_hint's audience")
		}
		clientID, hint = c.ClientID.String(), &c
	}
	var client *domain.OAuthClient
	if clientID != "" {
		c, err := s.clients.Client(ctx, clientID)
		if err != nil && !errors.Is(err, domain.ErrOAuthClientNotFound) {
			return EndSessionResult{}, err
		}
		if err == nil {
			client = &c
		}
	}
	if in.PostLogoutRedirectURI != "" && (client == nil || !client.AllowsPostLogoutRedirectURI(in.PostLogoutRedirectURI)) {
		return bad("post_logout_redirect_uri is not registered for the client")
	}
	if in.Browser != nil {
		if err := s.endSession(ctx, in.Browser.UserID, in.Browser.SessionID, domain.EndedByLogout); err != nil {
			return EndSessionResult{}, err
		}
	}
	if hint != nil && client != nil {
		if err := s.endSession(ctx, hint.Subject, hint.SessionID, domain.EndedByLogout); err != nil {
			return EndSessionResult{}, err
		}
	}
	var out EndSessionResult
	if client != nil {
		out.ClientName = client.Name
	}
	if in.PostLogoutRedirectURI != "" {
		q := url.Values{}
		if in.State != "" {
			q.Set("state", in.State)
		}
		out.Location = in.PostLogoutRedirectURI
		if len(q) > 0 {
			out.Location = withQuery(in.PostLogoutRedirectURI, q)
		}
	}
	return out, nil
}

// Grants lists the apps the caller gave access to, oldest first.
func (s *ProviderService) Grants(ctx context.Context, actor *domain.Principal) ([]AppAccess, error) {
	u, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return nil, err
	}
	grants, err := s.grants.Grants(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := make([]AppAccess, 0, len(grants))
	for _, g := range grants {
		c, err := s.clients.clients.ByID(ctx, g.ClientID)
		if errors.Is(err, domain.ErrOAuthClientNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, AppAccess{ClientID: g.ClientID, ClientName: c.Name, Scopes: g.Scopes,
			GrantedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt})
	}
	return out, nil
}

// RevokeGrant removes the caller's grant to the client clientID and ends
// the sessions the client was granted, on every node: the app must ask
// again. A malformed id or no grant is domain.ErrGrantNotFound.
func (s *ProviderService) RevokeGrant(ctx context.Context, actor *domain.Principal, clientID string) error {
	u, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return err
	}
	id, err := domain.ParseOAuthClientID(clientID)
	if err != nil {
		return domain.ErrGrantNotFound
	}
	now := s.clock.Now()
	var ended []string
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.grants.DeleteGrant(ctx, u.ID, id); err != nil {
			return err
		}
		if ended, err = s.tokens.RevokeClientSessions(ctx, u.ID, id, now); err != nil {
			return fmt.Errorf("end the client's sessions: %w", err)
		}
		for _, sid := range ended {
			if err := s.webhooks.sessionRevoked(ctx, u.ID, sid, string(domain.EndedByGrantRevocation)); err != nil {
				return err
			}
		}
		return s.webhooks.emit(ctx, domain.WebhookConsentRevoked, u.ID, map[string]any{"clientId": id.String()})
	})
	if err != nil {
		return err
	}
	s.sessionEnds.ended(ctx, ended...)
	for _, sid := range ended {
		s.events.note(ctx, domain.SessionRevokedEvent(actor.UserID, u.ID, domain.EndedByGrantRevocation, sid))
	}
	s.events.note(ctx, domain.ConsentRevokedEvent(actor.UserID, u.ID, id))
	return nil
}
