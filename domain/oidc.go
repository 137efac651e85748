package domain

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"slices"
	"time"
)

// The OpenID provider's rules (contract-identity.md, section 1): what its
// tokens say, how a code flow is proven (PKCE), and what each scope
// reveals. Its errors are OAuth's, named by the RFCs' codes, which the
// driving adapter writes as they are.

// OAuthError is a refusal of the provider with an error code of RFC 6749
// (§4.1.2.1, §5.2), RFC 7009 or OpenID Connect Core (§3.1.2.6), and a
// description for the client's developer: userd's own words, never a
// value the request sent.
type OAuthError struct {
	Code        string
	Description string
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// Is makes errors.Is match an OAuthError of the same code.
func (e *OAuthError) Is(target error) bool {
	t, ok := target.(*OAuthError)
	return ok && t.Code == e.Code
}

// The OAuth error codes the provider answers.
const (
	OAuthInvalidRequest       = "invalid_request"
	OAuthInvalidClient        = "invalid_client"
	OAuthInvalidGrant         = "invalid_grant"
	OAuthUnauthorizedClient   = "unauthorized_client"
	OAuthUnsupportedGrantType = "unsupported_grant_type"
	OAuthInvalidScope         = "invalid_scope"
	OAuthAccessDenied         = "access_denied"
	OAuthServerError          = "server_error"
	// OAuthTemporarilyUnavailable is answered with 503 (the claims hook
	// did not answer).
	OAuthTemporarilyUnavailable = "temporarily_unavailable"
	OAuthLoginRequired          = "login_required"
	OAuthConsentRequired        = "consent_required"
	OAuthInteractionRequired    = "interaction_required"
	OAuthInvalidToken           = "invalid_token"
)

// NewOAuthError returns the refusal of code, described.
func NewOAuthError(code, description string) *OAuthError {
	return &OAuthError{Code: code, Description: description}
}

// Lifetimes of the provider's tokens.
const (
	// IDTokenTTL is how long an ID token is valid: as long as an access
	// token by default, so that the keys' retirement, counted from the
	// access tokens' lifetime, never leaves an ID token without its key.
	IDTokenTTL = 15 * time.Minute
)

// OAuthAccessClaims is what an access token of the provider says (RFC
// 9068): whose (Subject, a user id, or the client's id for
// client_credentials), for which client and scopes, and, for a user, the
// session it belongs to and how it signed in.
type OAuthAccessClaims struct {
	Subject  string
	ClientID OAuthClientID
	Scopes   []OAuthScope
	// SessionID, AuthTime and AMR are those of the user's session; empty
	// for a token of client_credentials.
	SessionID string
	AuthTime  time.Time
	AMR       AMR
	// ID is the token's jti; IssuedAt and ExpiresAt its iat and exp.
	ID        string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Extra are the claims hook's claims, signed into the token; a
	// verified token's are not read back.
	Extra HookClaims
}

// ForUser reports whether the token was issued to a user (not to a client
// acting as itself).
func (c OAuthAccessClaims) ForUser() bool { return c.SessionID != "" }

// HasScope reports whether the token carries the scope s.
func (c OAuthAccessClaims) HasScope(s OAuthScope) bool { return slices.Contains(c.Scopes, s) }

// IDTokenClaims is what an ID token says of a sign-in, besides the user's
// claims of its scopes (UserClaims).
type IDTokenClaims struct {
	Subject   UserID
	ClientID  OAuthClientID
	Nonce     string
	SessionID string
	AuthTime  time.Time
	AMR       AMR
	IssuedAt  time.Time
	ExpiresAt time.Time
	User      UserClaims
	// Extra are the claims hook's claims, signed into the token.
	Extra HookClaims
}

// UserClaims are the claims of a user that the scopes granted reveal
// (OpenID Connect Core §5.4): profile → name, updated_at; email → email,
// email_verified; profiles → profiles. A nil field was not granted.
type UserClaims struct {
	Name          *string
	UpdatedAt     *time.Time
	Email         *string
	EmailVerified *bool
	Profiles      []string
}

// ClaimsOf returns the claims of u that scopes reveal.
func ClaimsOf(u User, scopes []OAuthScope) UserClaims {
	var c UserClaims
	if slices.Contains(scopes, ScopeProfile) {
		name, updated := u.Name, u.UpdatedAt
		c.Name, c.UpdatedAt = &name, &updated
	}
	if slices.Contains(scopes, ScopeEmail) {
		email, verified := u.Email.String(), u.EmailVerified
		c.Email, c.EmailVerified = &email, &verified
	}
	if slices.Contains(scopes, ScopeProfiles) {
		c.Profiles = u.Profiles.Strings()
	}
	return c
}

// ErrPKCE is a code_verifier that does not answer the code's challenge.
var ErrPKCE = errors.New("the code verifier does not match the challenge")

// PKCEMethodS256 is the one code_challenge_method the provider takes
// (RFC 7636; OAuth 2.1 drops plain).
const PKCEMethodS256 = "S256"

// VerifyPKCE checks a code_verifier against an S256 challenge (RFC 7636
// §4.6): a verifier of 43 to 128 characters of its alphabet whose
// SHA-256, in base64url without padding, is the challenge. The comparison
// is in constant time.
func VerifyPKCE(challenge, verifier string) error {
	if len(verifier) < 43 || len(verifier) > 128 {
		return ErrPKCE
	}
	for i := 0; i < len(verifier); i++ {
		c := verifier[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
		if !ok {
			return ErrPKCE
		}
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) != 1 {
		return ErrPKCE
	}
	return nil
}

// WellFormedPKCEChallenge reports whether s can be an S256 challenge: the
// base64url of a SHA-256, 43 characters.
func WellFormedPKCEChallenge(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == sha256.Size && len(s) == 43
}

// ParseOAuthScopes reads the scopes of a request ("openid email"), each
// once, in the order of OAuthScopes. An unknown scope is refused with
// invalid_scope, as one the client may not ask for (allowed).
func ParseOAuthScopes(requested []string, allowed func(OAuthScope) bool) ([]OAuthScope, error) {
	seen := map[OAuthScope]bool{}
	for _, r := range requested {
		s := OAuthScope(r)
		if !slices.Contains(OAuthScopes, s) || !allowed(s) {
			return nil, NewOAuthError(OAuthInvalidScope, "a scope is unknown, or not allowed to this client")
		}
		seen[s] = true
	}
	out := make([]OAuthScope, 0, len(seen))
	for _, s := range OAuthScopes {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// ScopeStrings returns scopes as the strings OAuth writes.
func ScopeStrings(scopes []OAuthScope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// SubsetOfScopes reports whether every scope of asked is in of.
func SubsetOfScopes(asked, of []OAuthScope) bool {
	for _, s := range asked {
		if !slices.Contains(of, s) {
			return false
		}
	}
	return true
}
