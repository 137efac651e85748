package application_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// The redirect URI of the tests' clients.
const appCallback = "https://app.example.com/callback"

// A PKCE pair: the challenge is the S256 of the verifier.
const (
	pkceVerifier  = "dBjftJeZ4CVP-mJ92K9bdZ1bqUXrkbLIuQzDtbYmYzA"
	pkceChallenge = "sk_dK4hAw7IBzWaQQsip9ANw9kacsyWQuETZ_NnuC8g"
)

// providerEnv is an env with the OpenID provider on, an admin, a user and
// a browser signed in as the user.
type providerEnv struct {
	*env
	admin   *domain.Principal
	user    domain.User
	browser application.BrowserSession
}

func newProviderEnv(t *testing.T, opts ...envOption) *providerEnv {
	t.Helper()
	e := newEnv(t, opts...)
	if e.svc.Provider == nil {
		t.Fatal("the provider is off")
	}
	_, admin := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	u, _ := e.seed(t, "ada@example.com")
	return &providerEnv{env: e, admin: admin, user: u, browser: e.signInBrowser(t, "ada@example.com")}
}

// signInBrowser signs email in, as the pages do, and returns the
// browser's session.
func (e *env) signInBrowser(t *testing.T, email string) application.BrowserSession {
	t.Helper()
	pair := login(t, e, email, seededPassword)
	p, err := e.auth.Authenticate(ctx, pair.Access.Token)
	wantErr(t, err, nil)
	return application.BrowserSession{UserID: p.UserID, SessionID: p.Session.ID}
}

// client registers a client of typ with the test's redirect URI and every
// grant it may have.
func (e *providerEnv) client(t *testing.T, typ string, firstParty bool) application.CreatedOAuthClient {
	t.Helper()
	in := clientIn("App", typ)
	in.FirstParty = &firstParty
	grants := []string{"authorization_code", "refresh_token"}
	if typ == "confidential" {
		grants = append(grants, "client_credentials")
	}
	in.GrantTypes = grants
	return createClient(t, e.env, e.admin, in)
}

// authorizeInput is a good request of client for openid and the rest.
func authorizeInput(client domain.OAuthClientID, scopes ...string) application.AuthorizeInput {
	if len(scopes) == 0 {
		scopes = []string{"openid", "profile", "email", "offline_access"}
	}
	return application.AuthorizeInput{ClientID: client.String(), RedirectURI: appCallback, ResponseType: "code",
		Scopes: scopes, State: "st-1", Nonce: "n-1", CodeChallenge: pkceChallenge, CodeChallengeMethod: "S256"}
}

// redirected parses a Location the provider sent the browser to, which
// must be the client's redirect URI with the provider's iss.
func redirected(t *testing.T, location string) url.Values {
	t.Helper()
	u, err := url.Parse(location)
	if err != nil || !strings.HasPrefix(location, appCallback+"?") {
		t.Fatalf("location %q is not the client's redirect URI", location)
	}
	q := u.Query()
	if q.Get("iss") != kit.ProviderIssuer {
		t.Errorf("iss = %q, want %q", q.Get("iss"), kit.ProviderIssuer)
	}
	return q
}

// code runs the flow of in for the browser up to its code, consenting
// when asked.
func (e *providerEnv) code(t *testing.T, in application.AuthorizeInput) string {
	t.Helper()
	id, err := e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if step.Consent != nil {
		step, err = e.svc.Provider.Consent(ctx, id, e.browser, true)
		wantErr(t, err, nil)
	}
	q := redirected(t, step.Location)
	if q.Get("state") != in.State || q.Get("code") == "" {
		t.Fatalf("redirect %q: want the code and state %q", step.Location, in.State)
	}
	return q.Get("code")
}

func wantOAuthError(t *testing.T, err error, code string) {
	t.Helper()
	var oerr *domain.OAuthError
	if !errors.As(err, &oerr) || oerr.Code != code {
		t.Fatalf("error = %v, want the OAuth error %s", err, code)
	}
}

// The whole code flow: sign-in, consent, code, tokens, userinfo,
// refresh, introspection; the grant skips the consent page next time.
func TestProvider_code_flow(t *testing.T) {
	e := newProviderEnv(t)
	created := e.client(t, "confidential", false)
	c := created.Client
	in := authorizeInput(c.ID)

	id, err := e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, nil)
	wantErr(t, err, nil)
	if !step.SignIn || step.ClientName != "App" {
		t.Fatalf("without a session: %+v, want the sign-in", step)
	}
	step, err = e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if step.Consent == nil || !slices.Equal(domain.ScopeStrings(step.Consent.Scopes), in.Scopes) {
		t.Fatalf("a third-party client: %+v, want the consent page for %v", step, in.Scopes)
	}
	step, err = e.svc.Provider.Consent(ctx, id, e.browser, true)
	wantErr(t, err, nil)
	code := redirected(t, step.Location).Get("code")

	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantErr(t, err, nil)
	if tokens.AccessToken == "" || tokens.IDToken == "" || tokens.RefreshToken == "" || tokens.ExpiresIn <= 0 {
		t.Fatalf("tokens = %+v, want access, ID and refresh tokens", tokens)
	}
	info, err := e.svc.Provider.UserInfo(ctx, tokens.AccessToken)
	wantErr(t, err, nil)
	if info.Subject != e.user.ID || info.Claims.Email == nil || *info.Claims.Email != "ada@example.com" || info.Claims.Profiles != nil {
		t.Errorf("userinfo = %+v", info)
	}
	intro, err := e.svc.Provider.Introspect(ctx, c, tokens.RefreshToken)
	wantErr(t, err, nil)
	if !intro.Active || intro.TokenType != "refresh_token" || intro.ClientID != c.ID {
		t.Errorf("introspection of the refresh token = %+v", intro)
	}

	// The session is in the user's list, named by its client.
	sessions, err := e.svc.Sessions.List(ctx, &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles}, e.user.ID.String())
	wantErr(t, err, nil)
	named := slices.IndexFunc(sessions, func(s application.SessionView) bool { return s.ClientName == "App" })
	if named < 0 || sessions[named].ClientID != c.ID {
		t.Errorf("sessions = %+v, want one named App", sessions)
	}

	// Refresh may narrow the scopes, never widen them.
	refreshed, err := e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, []string{"openid", "email"})
	wantErr(t, err, nil)
	if !slices.Equal(domain.ScopeStrings(refreshed.Scopes), []string{"openid", "email"}) || refreshed.RefreshToken == tokens.RefreshToken {
		t.Errorf("refreshed = %+v", refreshed)
	}
	_, err = e.svc.Provider.Refresh(ctx, c, refreshed.RefreshToken, []string{"profiles"})
	wantOAuthError(t, err, domain.OAuthInvalidScope)
	// The refusal left the token good for the retry.
	e.clock.Advance(time.Minute)
	_, err = e.svc.Provider.Refresh(ctx, c, refreshed.RefreshToken, nil)
	wantErr(t, err, nil)

	// The grant is remembered: the same scopes skip the consent page.
	e.code(t, in)
	apps, err := e.svc.Provider.Grants(ctx, &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles})
	wantErr(t, err, nil)
	if len(apps) != 1 || apps[0].ClientName != "App" {
		t.Errorf("grants = %+v", apps)
	}
}

// The negative matrix of the authorization endpoint: no redirect for an
// unknown client or an unregistered redirect URI; every other error goes
// back with state and iss.
func TestProvider_authorize_refusals(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client

	_, err := e.svc.Provider.Authorize(ctx, authorizeInput(domain.NewOAuthClientID(e.clock.Now())))
	wantErr(t, err, domain.ErrOAuthClientNotFound)
	in := authorizeInput(c.ID)
	in.RedirectURI = "https://evil.example.com/callback"
	_, err = e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, domain.ErrRedirectURINotRegistered)

	tests := []struct {
		name   string
		change func(*application.AuthorizeInput)
		code   string
	}{
		{"no PKCE", func(in *application.AuthorizeInput) { in.CodeChallenge, in.CodeChallengeMethod = "", "" }, domain.OAuthInvalidRequest},
		{"plain PKCE", func(in *application.AuthorizeInput) { in.CodeChallengeMethod = "plain" }, domain.OAuthInvalidRequest},
		{"a malformed challenge", func(in *application.AuthorizeInput) { in.CodeChallenge = "short" }, domain.OAuthInvalidRequest},
		{"response_type token", func(in *application.AuthorizeInput) { in.ResponseType = "token" }, "unsupported_response_type"},
		{"an unknown scope", func(in *application.AuthorizeInput) { in.Scopes = []string{"openid", "admin"} }, domain.OAuthInvalidScope},
		{"prompt none with login", func(in *application.AuthorizeInput) { in.Prompt = []string{"none", "login"} }, domain.OAuthInvalidRequest},
		{"a request object", func(in *application.AuthorizeInput) { in.RequestObject = true }, "request_not_supported"},
		{"a parameter sent twice", func(in *application.AuthorizeInput) { in.Malformed = "nonce" }, domain.OAuthInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := authorizeInput(c.ID)
			tt.change(&in)
			_, err := e.svc.Provider.Authorize(ctx, in)
			var aerr *application.AuthorizeError
			if !errors.As(err, &aerr) || aerr.Err.Code != tt.code {
				t.Fatalf("error = %v, want a redirect with %s", err, tt.code)
			}
			q := redirected(t, aerr.Location)
			if q.Get("error") != tt.code || q.Get("state") != "st-1" {
				t.Errorf("redirect = %q", aerr.Location)
			}
		})
	}
}

// prompt=none answers at once: login_required without a session,
// consent_required without a grant.
func TestProvider_prompt_none(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "confidential", false).Client
	in := authorizeInput(c.ID)
	in.Prompt = []string{"none"}
	id, err := e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, nil)
	wantErr(t, err, nil)
	if redirected(t, step.Location).Get("error") != domain.OAuthLoginRequired {
		t.Errorf("no session: %+v", step)
	}
	// The request ended: it cannot go on.
	_, err = e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, domain.ErrAuthRequestNotFound)

	id, err = e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err = e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if redirected(t, step.Location).Get("error") != domain.OAuthConsentRequired {
		t.Errorf("no grant: %+v", step)
	}
}

// prompt=login and max_age ask for a sign-in newer than the session's.
func TestProvider_prompt_login_and_max_age(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	e.clock.Advance(time.Minute)
	in := authorizeInput(c.ID)
	in.Prompt = []string{"login"}
	id, err := e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if !step.SignIn {
		t.Fatalf("prompt=login with an older sign-in: %+v", step)
	}
	e.clock.Advance(time.Second)
	fresh := e.signInBrowser(t, "ada@example.com")
	step, err = e.svc.Provider.Continue(ctx, id, &fresh)
	wantErr(t, err, nil)
	redirected(t, step.Location)

	maxAge := 30 * time.Second
	in = authorizeInput(c.ID)
	in.MaxAge = &maxAge
	id, err = e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	step, err = e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if !step.SignIn {
		t.Errorf("max_age older than the sign-in: %+v", step)
	}
	// max_age=0: a sign-in made for the request satisfies it, however
	// long it took.
	zero := time.Duration(0)
	in.MaxAge = &zero
	id, err = e.svc.Provider.Authorize(ctx, in)
	wantErr(t, err, nil)
	e.clock.Advance(time.Second)
	again := e.signInBrowser(t, "ada@example.com")
	e.clock.Advance(5 * time.Second)
	step, err = e.svc.Provider.Continue(ctx, id, &again)
	wantErr(t, err, nil)
	redirected(t, step.Location)
}

// Deny sends access_denied and remembers nothing.
func TestProvider_consent_denied(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "confidential", false).Client
	id, err := e.svc.Provider.Authorize(ctx, authorizeInput(c.ID))
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Consent(ctx, id, e.browser, false)
	wantErr(t, err, nil)
	if redirected(t, step.Location).Get("error") != domain.OAuthAccessDenied {
		t.Errorf("deny: %+v", step)
	}
	apps, err := e.svc.Provider.Grants(ctx, &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles})
	wantErr(t, err, nil)
	if len(apps) != 0 {
		t.Errorf("grants after deny = %+v", apps)
	}
}

// The token endpoint's refusals of a code: wrong verifier, another
// redirect URI, another client, expiry; a second use ends the tokens of
// the first.
func TestProvider_code_refusals(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	other := e.client(t, "public", true).Client

	code := e.code(t, authorizeInput(c.ID))
	_, err := e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, strings.Repeat("a", 43))
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	// A failed exchange used the code up.
	_, err = e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)

	code = e.code(t, authorizeInput(c.ID))
	_, err = e.svc.Provider.ExchangeCode(ctx, other, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)

	code = e.code(t, authorizeInput(c.ID))
	_, err = e.svc.Provider.ExchangeCode(ctx, c, code, appCallback+"/other", pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)

	code = e.code(t, authorizeInput(c.ID))
	e.clock.Advance(domain.AuthCodeTTL + time.Second)
	_, err = e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)

	code = e.code(t, authorizeInput(c.ID))
	first, err := e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantErr(t, err, nil)
	_, err = e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	_, err = e.svc.Provider.UserInfo(ctx, first.AccessToken)
	wantErr(t, err, domain.ErrInvalidToken)
	_, err = e.svc.Provider.Refresh(ctx, c, first.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
}

// A refresh token is its client's alone, and the provider's alone: userd's
// own refresh refuses it, another client's attempt leaves it working, and
// a reuse ends the grant's session.
func TestProvider_refresh_is_bound_to_its_client(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	other := e.client(t, "public", true).Client
	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID)), appCallback, pkceVerifier)
	wantErr(t, err, nil)

	_, err = e.auth.Refresh(ctx, tokens.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
	_, err = e.svc.Provider.Refresh(ctx, other, tokens.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	next, err := e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantErr(t, err, nil)

	// userd's own refresh token is not the provider's either.
	own := login(t, e.env, "ada@example.com", seededPassword)
	_, err = e.svc.Provider.Refresh(ctx, c, own.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	_, err = e.auth.Refresh(ctx, own.RefreshToken)
	wantErr(t, err, nil)

	// Reuse past the grace window ends the session.
	e.clock.Advance(time.Minute)
	_, err = e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	_, err = e.svc.Provider.Refresh(ctx, c, next.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	_, err = e.svc.Provider.UserInfo(ctx, next.AccessToken)
	wantErr(t, err, domain.ErrInvalidToken)
}

// Without offline_access, or without the refresh grant, there is no
// refresh token; without openid, no ID token.
func TestProvider_what_the_scopes_give(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID, "openid", "email")), appCallback, pkceVerifier)
	wantErr(t, err, nil)
	if tokens.RefreshToken != "" || tokens.IDToken == "" {
		t.Errorf("openid email: %+v", tokens)
	}
	tokens, err = e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID, "profile")), appCallback, pkceVerifier)
	wantErr(t, err, nil)
	if tokens.IDToken != "" {
		t.Errorf("no openid, yet an ID token")
	}
	info, err := e.svc.Provider.UserInfo(ctx, tokens.AccessToken)
	wantErr(t, err, nil)
	if info.Claims.Name == nil || info.Claims.Email != nil {
		t.Errorf("userinfo of profile = %+v", info.Claims)
	}
}

// A user disabled or a client deleted meanwhile cannot finish a flow.
func TestProvider_disabled_user_and_deleted_client(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	code := e.code(t, authorizeInput(c.ID))
	disabled := true
	_, err := e.users.Update(ctx, e.admin, e.user.ID.String(), application.UpdateInput{Disabled: &disabled})
	wantErr(t, err, nil)
	_, err = e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)

	f := newProviderEnv(t)
	c = f.client(t, "public", true).Client
	id, err := f.svc.Provider.Authorize(ctx, authorizeInput(c.ID))
	wantErr(t, err, nil)
	wantErr(t, f.svc.OAuthClients.Delete(ctx, f.admin, c.ID.String()), nil)
	_, err = f.svc.Provider.Continue(ctx, id, &f.browser)
	wantErr(t, err, domain.ErrAuthRequestNotFound)
}

// Revocation ends the session of a refresh or access token of the
// client; a grant's removal ends every session of it.
func TestProvider_revocation(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "confidential", false).Client
	exchange := func() application.ProviderTokens {
		tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID)), appCallback, pkceVerifier)
		wantErr(t, err, nil)
		return tokens
	}
	a := exchange()
	wantErr(t, e.svc.Provider.Revoke(ctx, c, a.RefreshToken), nil)
	_, err := e.svc.Provider.UserInfo(ctx, a.AccessToken)
	wantErr(t, err, domain.ErrInvalidToken)
	intro, err := e.svc.Provider.Introspect(ctx, c, a.RefreshToken)
	wantErr(t, err, nil)
	if intro.Active {
		t.Error("a revoked refresh token is active")
	}

	b := exchange()
	wantErr(t, e.svc.Provider.Revoke(ctx, c, b.AccessToken), nil)
	_, err = e.svc.Provider.Refresh(ctx, c, b.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	wantErr(t, e.svc.Provider.Revoke(ctx, c, "not a token"), nil)

	d := exchange()
	user := &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles}
	wantErr(t, e.svc.Provider.RevokeGrant(ctx, user, c.ID.String()), nil)
	_, err = e.svc.Provider.Refresh(ctx, c, d.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	wantErr(t, e.svc.Provider.RevokeGrant(ctx, user, c.ID.String()), domain.ErrGrantNotFound)
	// The consent page comes back.
	id, err := e.svc.Provider.Authorize(ctx, authorizeInput(c.ID))
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if step.Consent == nil {
		t.Errorf("after the grant's removal: %+v, want the consent page", step)
	}
}

// client_credentials: a token of the client itself, never a user's scope
// of openid or offline_access, never for a public client.
func TestProvider_client_credentials(t *testing.T) {
	e := newProviderEnv(t)
	created := e.client(t, "confidential", false)
	c, err := e.svc.Provider.ClientForToken(ctx, created.Client.ID.String(), created.Secret, true)
	wantErr(t, err, nil)
	tokens, err := e.svc.Provider.ClientCredentials(ctx, c, []string{"profile"})
	wantErr(t, err, nil)
	if tokens.IDToken != "" || tokens.RefreshToken != "" {
		t.Errorf("client_credentials = %+v", tokens)
	}
	intro, err := e.svc.Provider.Introspect(ctx, c, tokens.AccessToken)
	wantErr(t, err, nil)
	if !intro.Active || intro.Subject != c.ID.String() || intro.SessionID != "" {
		t.Errorf("introspection = %+v", intro)
	}
	_, err = e.svc.Provider.UserInfo(ctx, tokens.AccessToken)
	wantErr(t, err, domain.ErrInvalidToken)
	_, err = e.svc.Provider.ClientCredentials(ctx, c, []string{"openid"})
	wantOAuthError(t, err, domain.OAuthInvalidScope)

	public := e.client(t, "public", true).Client
	_, err = e.svc.Provider.ClientCredentials(ctx, public, nil)
	wantOAuthError(t, err, domain.OAuthUnauthorizedClient)
	_, err = e.svc.Provider.ClientForToken(ctx, created.Client.ID.String(), "", false)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
	_, err = e.svc.Provider.ClientForToken(ctx, created.Client.ID.String(), "wrong", true)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
	_, err = e.svc.Provider.Introspect(ctx, public, tokens.AccessToken)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
}

// RP-initiated logout ends the browser's session and the hint's, and goes
// back only to a registered post-logout URI.
func TestProvider_end_session(t *testing.T) {
	e := newProviderEnv(t)
	in := clientIn("App", "public")
	in.PostLogoutRedirectURIs = []string{"https://app.example.com/bye"}
	firstParty := true
	in.FirstParty = &firstParty
	c := createClient(t, e.env, e.admin, in).Client
	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID)), appCallback, pkceVerifier)
	wantErr(t, err, nil)

	_, err = e.svc.Provider.EndSession(ctx, application.EndSessionInput{IDTokenHint: tokens.IDToken,
		PostLogoutRedirectURI: "https://evil.example.com/"})
	wantOAuthError(t, err, domain.OAuthInvalidRequest)
	_, err = e.svc.Provider.EndSession(ctx, application.EndSessionInput{IDTokenHint: "x.y.z"})
	wantOAuthError(t, err, domain.OAuthInvalidRequest)

	res, err := e.svc.Provider.EndSession(ctx, application.EndSessionInput{IDTokenHint: tokens.IDToken,
		PostLogoutRedirectURI: "https://app.example.com/bye", State: "s 1", Browser: &e.browser})
	wantErr(t, err, nil)
	if res.Location != "https://app.example.com/bye?state=s+1" || res.ClientName != "App" {
		t.Errorf("end session = %+v", res)
	}
	_, err = e.svc.Provider.UserInfo(ctx, tokens.AccessToken)
	wantErr(t, err, domain.ErrInvalidToken)
	id, err := e.svc.Provider.Authorize(ctx, authorizeInput(c.ID))
	wantErr(t, err, nil)
	step, err := e.svc.Provider.Continue(ctx, id, &e.browser)
	wantErr(t, err, nil)
	if !step.SignIn {
		t.Errorf("after the logout the browser's session is live: %+v", step)
	}
}

// The PKCE pair of the tests is one.
func TestProvider_pkce_pair(t *testing.T) {
	sum := sha256.Sum256([]byte(pkceVerifier))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != pkceChallenge {
		t.Fatal("the PKCE pair does not match")
	}
}

// Dynamic registration is closed by default; open, it makes public
// clients of the code flow only, never first party.
func TestProvider_dynamic_registration(t *testing.T) {
	closed := newEnv(t)
	in := domain.OAuthClientInput{Name: ptr("MCP"), RedirectURIs: []string{"http://127.0.0.1/cb"}}
	_, err := closed.svc.OAuthClients.Register(ctx, in)
	wantErr(t, err, application.ErrRegistrationClosed)

	e := newEnv(t, func(c *application.Config, _ *application.Deps) { c.OIDCDynamicRegistration = true })
	c, err := e.svc.OAuthClients.Register(ctx, in)
	wantErr(t, err, nil)
	if !c.IsPublic() || c.FirstParty || c.SecretHash != "" ||
		!slices.Equal(c.GrantTypes, []domain.OAuthGrantType{domain.GrantAuthorizationCode, domain.GrantRefreshToken}) {
		t.Errorf("registered = %+v", c)
	}
	for name, bad := range map[string]domain.OAuthClientInput{
		"confidential":       {Name: ptr("x"), Type: ptr("confidential"), RedirectURIs: in.RedirectURIs},
		"first party":        {Name: ptr("x"), FirstParty: ptr(true), RedirectURIs: in.RedirectURIs},
		"client_credentials": {Name: ptr("x"), GrantTypes: []string{"client_credentials"}, RedirectURIs: in.RedirectURIs},
		"a bad redirect URI": {Name: ptr("x"), RedirectURIs: []string{"http://example.com/cb"}},
	} {
		var verr *domain.ValidationError
		if _, err := e.svc.OAuthClients.Register(ctx, bad); !errors.As(err, &verr) {
			t.Errorf("%s: error = %v, want a validation error", name, err)
		}
	}
}

// A browser that signs in to apps only keeps its session: each flow
// that goes through it counts as a use, so the pages' idle limit does not
// end it while the person keeps working in apps.
func TestProvider_flows_keep_the_browser_session(t *testing.T) {
	e := newProviderEnv(t)
	c := e.client(t, "public", true).Client
	// The pages' idle limit: the browser's session is a console session.
	ctxPages := domain.WithRequestMeta(ctx, domain.RequestMeta{SessionLimits: domain.SessionLimits{Absolute: 8 * time.Hour, Idle: 30 * time.Minute}})
	pair, err := e.auth.Login(ctxPages, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
	wantErr(t, err, nil)
	p, err := e.auth.Authenticate(ctx, pair.Tokens.Access.Token)
	wantErr(t, err, nil)
	browser := application.BrowserSession{UserID: p.UserID, SessionID: p.Session.ID}
	for range 6 {
		e.clock.Advance(20 * time.Minute)
		id, err := e.svc.Provider.Authorize(ctx, authorizeInput(c.ID))
		wantErr(t, err, nil)
		step, err := e.svc.Provider.Continue(ctx, id, &browser)
		wantErr(t, err, nil)
		if step.SignIn {
			t.Fatalf("after %s of flows only, the browser's session lapsed", e.clock.Now().Sub(kit.Start))
		}
	}
}
