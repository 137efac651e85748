package application

import (
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// ProviderService is the OpenID provider (contract-identity.md, section
// 1): the code flow with PKCE from /oauth2/authorize through the browser's
// sign-in and consent to the token endpoint, refresh, client_credentials,
// userinfo, introspection, revocation, the end of a browser session, and a
// user's grants. Its sessions are refresh families granted to a client
// (domain.RefreshFamily.ClientID), so that the sessions API, revocation
// on every node and the events of userd's own sessions hold for them.
type ProviderService struct {
	core
	providerPorts
}

// providerPorts are what the ProviderService uses.
type providerPorts struct {
	users       ports.UserRepository
	clients     *OAuthClientService
	requests    ports.AuthRequestStore
	grants      ports.GrantStore
	tokens      ports.RefreshTokenStore
	codec       ports.RefreshTokenCodec
	oauthTokens ports.OAuthTokens
	tx          ports.Transactor
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	refresh     *refreshRotation
	hook        *claimsHook
	// issuer is the provider's issuer (USERD_PUBLIC_URL without a
	// trailing slash), the iss of its redirects (RFC 9207).
	issuer           string
	refreshTTL       time.Duration
	refreshFamilyTTL time.Duration
}

// AuthorizeInput is an authorization request as /oauth2/authorize
// received it (query or form), each parameter as sent; Scopes, Prompt and
// ACRValues split at spaces. MaxAge is nil when max_age was not sent.
type AuthorizeInput struct {
	ClientID            string
	RedirectURI         string
	ResponseType        string
	ResponseMode        string
	Scopes              []string
	State               string
	Nonce               string
	CodeChallenge       string
	CodeChallengeMethod string
	Prompt              []string
	MaxAge              *time.Duration
	ACRValues           []string
	LoginHint           string
	// RequestObject is set when a request or request_uri parameter was
	// sent, which the provider does not support.
	RequestObject bool
	// Malformed names a parameter the adapter could not read (sent
	// twice, or a max_age that is no number of seconds): the request is
	// refused with invalid_request once its client and redirect URI are
	// known good.
	Malformed string
}

// AuthorizeError is a refusal of an authorization request that goes back
// to the client: Location is its redirect URI with error,
// error_description, state and iss (RFC 6749 §4.1.2.1, RFC 9207).
type AuthorizeError struct {
	Location string
	Err      *domain.OAuthError
}

func (e *AuthorizeError) Error() string { return "authorize: " + e.Err.Error() }

// Unwrap lets errors.Is match the OAuth error's code.
func (e *AuthorizeError) Unwrap() error { return e.Err }

// BrowserSession is the sign-in a browser holds (the provider's SSO
// cookie): the user, and the session (refresh family) that sign-in
// opened.
type BrowserSession struct {
	UserID    domain.UserID
	SessionID string
}

// AuthorizeStep is what the browser does next in a flow: exactly one of
// SignIn (sign in, or again, then come back to Continue), Consent (show
// the consent page) and Location (go there: the client's redirect URI
// with the code, or with an error, and state and iss).
type AuthorizeStep struct {
	SignIn   bool
	Consent  *ConsentPrompt
	Location string
	// ClientName names the client, for the sign-in page's heading.
	ClientName string
}

// ConsentPrompt is what the consent page shows: the client, the scopes it
// asks that the user has not granted it yet, and the user.
type ConsentPrompt struct {
	RequestID string
	Client    domain.OAuthClient
	Scopes    []domain.OAuthScope
	User      domain.User
}

// ProviderTokens is the token endpoint's answer: an access token, its
// lifetime and scopes, and an ID token and a refresh token when the flow
// gives them.
type ProviderTokens struct {
	AccessToken  string
	ExpiresIn    time.Duration
	Scopes       []domain.OAuthScope
	IDToken      string
	RefreshToken string
}

// UserInfo is the answer of /oauth2/userinfo: the subject and the claims
// the token's scopes reveal.
type UserInfo struct {
	Subject domain.UserID
	Claims  domain.UserClaims
}

// The token types that introspection names (RFC 7662 §2.2): an access
// token's is its type at the token endpoint (RFC 6749 §5.1), Bearer; a
// refresh token has none there, and is named so.
const (
	TokenTypeAccess  = "Bearer"
	TokenTypeRefresh = "refresh_token"
)

// Introspection is what RFC 7662 says of a token: Active false and
// nothing else for anything but a live token of the provider.
type Introspection struct {
	Active    bool
	Subject   string
	ClientID  domain.OAuthClientID
	Scopes    []domain.OAuthScope
	IssuedAt  time.Time
	ExpiresAt time.Time
	// TokenType is TokenTypeAccess or TokenTypeRefresh.
	TokenType string
	SessionID string
}

// EndSessionInput is an RP-initiated logout (OpenID Connect RP-Initiated
// Logout 1.0): its parameters, and the browser's session if it has one.
type EndSessionInput struct {
	IDTokenHint           string
	ClientID              string
	PostLogoutRedirectURI string
	State                 string
	Browser               *BrowserSession
}

// EndSessionResult is where the browser goes once its session ended:
// Location (the client's post-logout redirect URI, with state), or, when
// empty, the signed-out page, which names ClientName when known.
type EndSessionResult struct {
	Location   string
	ClientName string
}

// AppAccess is a grant a user gave a client, as the account page lists
// it.
type AppAccess struct {
	ClientID   domain.OAuthClientID
	ClientName string
	Scopes     []domain.OAuthScope
	GrantedAt  time.Time
	UpdatedAt  time.Time
}
