package application

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/userd/userd/domain"
)

// Bounds of an authorization request's free-form parameters: what a
// client may reasonably send, and what the store keeps of a stranger's
// request.
const (
	maxStateLen     = 1024
	maxNonceLen     = 512
	maxLoginHintLen = 256
	maxACRValues    = 8
)

// Algorithms returns the algorithms ID tokens can be signed with, RS256
// first (discovery's id_token_signing_alg_values_supported).
func (s *ProviderService) Algorithms() []string { return s.oauthTokens.Algorithms() }

// Authorize checks an authorization request and stores it; it returns the
// request's id, for the pages to continue with (Continue). An unknown
// client is domain.ErrOAuthClientNotFound and a redirect URI the client
// did not register domain.ErrRedirectURINotRegistered: the caller shows a
// page (400) and never redirects. Every other refusal is an
// *AuthorizeError, whose Location the browser is sent to.
func (s *ProviderService) Authorize(ctx context.Context, in AuthorizeInput) (string, error) {
	client, err := s.clients.Client(ctx, in.ClientID)
	if err != nil {
		return "", err
	}
	if in.RedirectURI == "" || !client.AllowsRedirectURI(in.RedirectURI) {
		return "", domain.ErrRedirectURINotRegistered
	}
	req, oerr := s.authRequestOf(client, in)
	if oerr != nil {
		return "", s.refuse(in.RedirectURI, in.State, oerr)
	}
	now := s.clock.Now()
	req.ID, req.CreatedAt, req.ExpiresAt = domain.NewAuthRequestID(), now, now.Add(domain.AuthRequestTTL)
	if err := s.requests.CreateAuthRequest(ctx, req); err != nil {
		return "", fmt.Errorf("store authorization request: %w", err)
	}
	return req.ID, nil
}

// authRequestOf judges the parameters of a request whose client and
// redirect URI are known good, in the order of RFC 6749 §4.1.2.1.
func (s *ProviderService) authRequestOf(client domain.OAuthClient, in AuthorizeInput) (domain.AuthRequest, *domain.OAuthError) {
	bad := func(desc string) (domain.AuthRequest, *domain.OAuthError) {
		return domain.AuthRequest{}, domain.NewOAuthError(domain.OAuthInvalidRequest, desc)
	}
	switch {
	case in.Malformed != "":
		return bad(in.Malformed + " is sent more than once, or malformed")
	case in.RequestObject:
		return domain.AuthRequest{}, domain.NewOAuthError("request_not_supported", "request objects are not supported")
	case in.ResponseType != "code":
		return domain.AuthRequest{}, domain.NewOAuthError("unsupported_response_type", "response_type must be code")
	case in.ResponseMode != "" && in.ResponseMode != "query":
		return bad("response_mode must be query")
	case !client.HasGrant(domain.GrantAuthorizationCode):
		return domain.AuthRequest{}, domain.NewOAuthError(domain.OAuthUnauthorizedClient, "the client may not use the authorization code flow")
	case in.CodeChallenge == "":
		return bad("code_challenge is required (PKCE with S256)")
	case in.CodeChallengeMethod != domain.PKCEMethodS256:
		return bad("code_challenge_method must be S256")
	case !domain.WellFormedPKCEChallenge(in.CodeChallenge):
		return bad("code_challenge is not an S256 challenge")
	case len(in.State) > maxStateLen || len(in.Nonce) > maxNonceLen || len(in.LoginHint) > maxLoginHintLen ||
		len(in.ACRValues) > maxACRValues:
		return bad("a parameter is too long")
	case in.MaxAge != nil && *in.MaxAge < 0:
		return bad("max_age must not be negative")
	}
	prompt, ok := parsePrompt(in.Prompt)
	if !ok {
		return bad("prompt holds an unknown value, or none with another")
	}
	scopes, err := domain.ParseOAuthScopes(in.Scopes, client.AllowsScope)
	if err != nil {
		var oerr *domain.OAuthError
		errors.As(err, &oerr)
		return domain.AuthRequest{}, oerr
	}
	if len(scopes) == 0 {
		return domain.AuthRequest{}, domain.NewOAuthError(domain.OAuthInvalidScope, "scope is required")
	}
	return domain.AuthRequest{ClientID: client.ID, RedirectURI: in.RedirectURI, Scopes: scopes, State: in.State,
		Nonce: in.Nonce, CodeChallenge: in.CodeChallenge, Prompt: prompt, MaxAge: in.MaxAge,
		ACRValues: slices.Clone(in.ACRValues), LoginHint: in.LoginHint}, nil
}

// parsePrompt keeps the prompt values the provider acts on; select_account
// is accepted and needs nothing (a browser holds one session). none with
// any other value is an error (OpenID Connect Core §3.1.2.1).
func parsePrompt(values []string) ([]string, bool) {
	var out []string
	for _, v := range values {
		switch v {
		case domain.PromptNone, domain.PromptLogin, domain.PromptConsent:
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		case "select_account":
		default:
			return nil, false
		}
	}
	if slices.Contains(out, domain.PromptNone) && len(values) > 1 {
		return nil, false
	}
	return out, true
}

// refuse is the answer to a request that goes back to its client with
// err.
func (s *ProviderService) refuse(redirectURI, state string, err *domain.OAuthError) *AuthorizeError {
	q := url.Values{"error": {err.Code}, "error_description": {err.Description}, "iss": {s.issuer}}
	if state != "" {
		q.Set("state", state)
	}
	return &AuthorizeError{Location: withQuery(redirectURI, q), Err: err}
}

// withQuery adds q to uri's query (a registered redirect URI may have
// one of its own, RFC 6749 §3.1.2).
func withQuery(uri string, q url.Values) string {
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + q.Encode()
}

// Continue takes the flow requestID on for the browser, signed in
// (browser) or not (nil): to the sign-in page, the consent page, or the
// client with a code or an error. An unknown, expired or finished
// request is domain.ErrAuthRequestNotFound (a page says to start again
// from the app).
func (s *ProviderService) Continue(ctx context.Context, requestID string, browser *BrowserSession) (AuthorizeStep, error) {
	req, client, err := s.liveRequest(ctx, requestID)
	if err != nil {
		return AuthorizeStep{}, err
	}
	now := s.clock.Now()
	user, session, err := s.browserSession(ctx, browser, now)
	if err != nil {
		return AuthorizeStep{}, err
	}
	if user == nil || s.mustSignInAgain(req, *user, session, now) {
		if req.HasPrompt(domain.PromptNone) {
			return s.endFlow(ctx, req, domain.NewOAuthError(domain.OAuthLoginRequired, "the user must sign in"))
		}
		return AuthorizeStep{SignIn: true, ClientName: client.Name}, nil
	}
	if !client.FirstParty {
		grant, err := s.grants.Grant(ctx, user.ID, client.ID)
		if err != nil && !errors.Is(err, domain.ErrGrantNotFound) {
			return AuthorizeStep{}, err
		}
		if err != nil || !grant.Covers(req.Scopes) || req.HasPrompt(domain.PromptConsent) {
			if req.HasPrompt(domain.PromptNone) {
				return s.endFlow(ctx, req, domain.NewOAuthError(domain.OAuthConsentRequired, "the user must consent"))
			}
			return AuthorizeStep{ClientName: client.Name,
				Consent: &ConsentPrompt{RequestID: req.ID, Client: client, Scopes: req.Scopes, User: *user}}, nil
		}
	}
	return s.issueCode(ctx, req, client, session, now)
}

// Consent records the user's answer on the consent page: allow gives the
// client the scopes asked (remembered as a grant) and the code; deny
// sends access_denied. The browser must still hold the session it
// consented with; without it, the step is the sign-in again.
func (s *ProviderService) Consent(ctx context.Context, requestID string, browser BrowserSession, allow bool) (AuthorizeStep, error) {
	req, client, err := s.liveRequest(ctx, requestID)
	if err != nil {
		return AuthorizeStep{}, err
	}
	now := s.clock.Now()
	user, session, err := s.browserSession(ctx, &browser, now)
	if err != nil {
		return AuthorizeStep{}, err
	}
	if user == nil {
		return AuthorizeStep{SignIn: true, ClientName: client.Name}, nil
	}
	if !allow {
		return s.endFlow(ctx, req, domain.NewOAuthError(domain.OAuthAccessDenied, "the user denied the request"))
	}
	if err := s.giveConsent(ctx, user.ID, client.ID, req.Scopes, now); err != nil {
		return AuthorizeStep{}, err
	}
	return s.issueCode(ctx, req, client, session, now)
}

// giveConsent remembers the user's grant of scopes to the client, beside
// what it granted before.
func (s *ProviderService) giveConsent(ctx context.Context, user domain.UserID, client domain.OAuthClientID,
	scopes []domain.OAuthScope, now time.Time) error {
	g, err := s.grants.Grant(ctx, user, client)
	switch {
	case errors.Is(err, domain.ErrGrantNotFound):
		g = domain.Grant{UserID: user, ClientID: client, CreatedAt: now}
	case err != nil:
		return err
	}
	g.Scopes, g.UpdatedAt = domain.UnionScopes(g.Scopes, scopes), now
	err = s.webhooks.inTxFor(ctx, domain.WebhookConsentGiven, func(ctx context.Context) error {
		if err := s.grants.PutGrant(ctx, g); err != nil {
			return fmt.Errorf("store grant: %w", err)
		}
		return s.webhooks.emit(ctx, domain.WebhookConsentGiven, user,
			map[string]any{"clientId": client.String(), "scopes": domain.ScopeStrings(g.Scopes)})
	})
	if err != nil {
		return err
	}
	s.events.note(ctx, domain.ConsentGivenEvent(user, client, scopes))
	return nil
}

// liveRequest returns the live request requestID, waiting for its code,
// and its client; a client deleted meanwhile ends the flow.
func (s *ProviderService) liveRequest(ctx context.Context, requestID string) (domain.AuthRequest, domain.OAuthClient, error) {
	req, err := s.requests.AuthRequest(ctx, requestID, s.clock.Now())
	if err != nil {
		return domain.AuthRequest{}, domain.OAuthClient{}, err
	}
	client, err := s.clients.clients.ByID(ctx, req.ClientID)
	if errors.Is(err, domain.ErrOAuthClientNotFound) {
		return domain.AuthRequest{}, domain.OAuthClient{}, domain.ErrAuthRequestNotFound
	}
	return req, client, err
}

// browserSession returns the user and the session of a browser's
// sign-in, or nil when it has none that serves: no cookie, a session
// ended or lapsed, one granted to a client (never a browser's), or an
// account disabled or deleted since.
func (s *ProviderService) browserSession(ctx context.Context, browser *BrowserSession, now time.Time) (*domain.User, domain.RefreshFamily, error) {
	if browser == nil || browser.SessionID == "" {
		return nil, domain.RefreshFamily{}, nil
	}
	f, err := s.tokens.Family(ctx, browser.SessionID)
	if errors.Is(err, domain.ErrSessionNotFound) {
		return nil, domain.RefreshFamily{}, nil
	}
	if err != nil {
		return nil, domain.RefreshFamily{}, err
	}
	if f.UserID != browser.UserID || f.ForClient() || !f.Active(now) {
		return nil, domain.RefreshFamily{}, nil
	}
	u, err := s.users.ByID(ctx, f.UserID)
	if errors.Is(err, domain.ErrUserNotFound) || (err == nil && u.Disabled) {
		return nil, domain.RefreshFamily{}, nil
	}
	if err != nil {
		return nil, domain.RefreshFamily{}, err
	}
	// An app's sign-in through this session uses it as the pages do: its
	// idle limit counts from now, though no page refreshed its tokens (an
	// app's cross-site link carries no console cookie).
	if err := s.tokens.Touch(ctx, f.ID, now); err != nil {
		return nil, domain.RefreshFamily{}, err
	}
	return &u, f, nil
}

// mustSignInAgain reports whether the request asks more of the sign-in
// than the browser's session gave: prompt=login (a sign-in after the
// request was made), an auth_time older than max_age (from before the
// request), or acr_values
// aal2 from an account with a second factor that signed in without it.
func (s *ProviderService) mustSignInAgain(req domain.AuthRequest, u domain.User, session domain.RefreshFamily, now time.Time) bool {
	authTime := session.SignedInAt()
	switch {
	case req.HasPrompt(domain.PromptLogin) && authTime.Before(req.CreatedAt):
		return true
	case req.MaxAge != nil && now.Sub(authTime) > *req.MaxAge && authTime.Before(req.CreatedAt):
		// A sign-in made for this request satisfies any max_age, 0 and
		// a slow sign-in included: asking again would never end.
		return true
	case slices.Contains(req.ACRValues, domain.ACRMultiFactor) && u.MFAEnabled && session.AMR.ACR() != domain.ACRMultiFactor:
		return true
	}
	return false
}

// endFlow ends a request with err, which goes back to its client.
func (s *ProviderService) endFlow(ctx context.Context, req domain.AuthRequest, err *domain.OAuthError) (AuthorizeStep, error) {
	if derr := s.requests.DeleteAuthRequest(ctx, req.ID); derr != nil {
		return AuthorizeStep{}, derr
	}
	return AuthorizeStep{Location: s.refuse(req.RedirectURI, req.State, err).Location}, nil
}

// issueCode gives the request its code, bound to the browser's session,
// and sends the browser back to the client with it.
func (s *ProviderService) issueCode(ctx context.Context, req domain.AuthRequest, client domain.OAuthClient,
	session domain.RefreshFamily, now time.Time) (AuthorizeStep, error) {
	code, hash := domain.NewAuthCode()
	signed := domain.AuthRequest{UserID: session.UserID, AuthTime: session.SignedInAt(), AMR: session.AMR.Clone(),
		BrowserSessionID: session.ID, CodeHash: hash, CodeExpiresAt: now.Add(domain.AuthCodeTTL)}
	if err := s.requests.AttachCode(ctx, req.ID, signed, now); err != nil {
		return AuthorizeStep{}, err
	}
	q := url.Values{"code": {code}, "iss": {s.issuer}}
	if req.State != "" {
		q.Set("state", req.State)
	}
	return AuthorizeStep{Location: withQuery(req.RedirectURI, q), ClientName: client.Name}, nil
}
