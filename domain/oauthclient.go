package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"
)

// OAuthClientID identifies an OAuth/OpenID client: its client_id, 24
// lowercase hexadecimal characters made like a UserID.
type OAuthClientID string

// NewOAuthClientID returns a fresh id for a client created at now.
func NewOAuthClientID(now time.Time) OAuthClientID { return OAuthClientID(NewUserID(now)) }

// ParseOAuthClientID checks the form of a client id. Anything but 24
// lowercase hexadecimal characters is ErrInvalidOAuthClientID, so that it
// never reaches a query.
func ParseOAuthClientID(s string) (OAuthClientID, error) {
	if _, err := ParseUserID(s); err != nil {
		return "", ErrInvalidOAuthClientID
	}
	return OAuthClientID(s), nil
}

// String returns the id in its 24-character form.
func (id OAuthClientID) String() string { return string(id) }

// Errors of OAuth clients.
var (
	// ErrInvalidOAuthClientID: a client id that is not 24 lowercase hex
	// characters.
	ErrInvalidOAuthClientID = errors.New("invalid client id")
	// ErrOAuthClientNotFound: no client has the id.
	ErrOAuthClientNotFound = errors.New("oauth client not found")
	// ErrInvalidClientCredentials: a client id and secret that do not
	// authenticate a client: an unknown or malformed id, a public client
	// (it has no secret), or a wrong secret. One error for all of them,
	// the token endpoint's invalid_client.
	ErrInvalidClientCredentials = errors.New("invalid client credentials")
	// ErrPublicOAuthClient: a secret was asked of a public client, which
	// has none.
	ErrPublicOAuthClient = errors.New("a public client has no secret")
)

// OAuthClientType says whether a client can keep a secret.
type OAuthClientType string

// Client types (RFC 6749 §2.1).
const (
	// OAuthClientConfidential runs on a server and authenticates with its
	// secret.
	OAuthClientConfidential OAuthClientType = "confidential"
	// OAuthClientPublic is a browser or native app: it has no secret, and
	// proves a code flow with PKCE alone.
	OAuthClientPublic OAuthClientType = "public"
)

// OAuthGrantType is a way a client may get tokens.
type OAuthGrantType string

// Grant types.
const (
	GrantAuthorizationCode OAuthGrantType = "authorization_code"
	GrantRefreshToken      OAuthGrantType = "refresh_token"
	// GrantClientCredentials is for confidential clients only: the client
	// acts as itself.
	GrantClientCredentials OAuthGrantType = "client_credentials"
)

// OAuthGrantTypes lists the grant types, in the order a client's are kept.
var OAuthGrantTypes = []OAuthGrantType{GrantAuthorizationCode, GrantRefreshToken, GrantClientCredentials}

// OAuthScope is a scope a client may ask for.
type OAuthScope string

// Scopes.
const (
	ScopeOpenID        OAuthScope = "openid"
	ScopeProfile       OAuthScope = "profile"
	ScopeEmail         OAuthScope = "email"
	ScopeProfiles      OAuthScope = "profiles"
	ScopeOfflineAccess OAuthScope = "offline_access"
)

// OAuthScopes lists the scopes, in the order a client's are kept; a new
// client may ask for all of them unless told otherwise.
var OAuthScopes = []OAuthScope{ScopeOpenID, ScopeProfile, ScopeEmail, ScopeProfiles, ScopeOfflineAccess}

// IDTokenAlg is the algorithm that signs a client's ID tokens.
type IDTokenAlg string

// ID-token algorithms. RS256 is the default: every OpenID client supports
// it.
const (
	IDTokenRS256 IDTokenAlg = "RS256"
	IDTokenEdDSA IDTokenAlg = "EdDSA"
)

// OAuthClient is an app that signs its users in through userd's OpenID
// provider, or a service that gets tokens as itself.
type OAuthClient struct {
	ID   OAuthClientID
	Name string
	Type OAuthClientType
	// RedirectURIs are where a code may be sent, and
	// PostLogoutRedirectURIs where a sign-out may return: matched as
	// exact strings (AllowsRedirectURI).
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	// GrantTypes and Scopes are in the order of OAuthGrantTypes and
	// OAuthScopes, each once.
	GrantTypes []OAuthGrantType
	Scopes     []OAuthScope
	// FirstParty clients are the deployment's own: no consent page.
	FirstParty        bool
	IDTokenSigningAlg IDTokenAlg
	// SecretHash is HashOAuthClientSecret of the secret of a confidential
	// client; empty for a public one. The secret itself is never stored.
	SecretHash string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// IsPublic reports whether c is a public client, without a secret.
func (c OAuthClient) IsPublic() bool { return c.Type == OAuthClientPublic }

// HasGrant reports whether c may use the grant type g.
func (c OAuthClient) HasGrant(g OAuthGrantType) bool {
	for _, have := range c.GrantTypes {
		if have == g {
			return true
		}
	}
	return false
}

// AllowsScope reports whether c may ask for the scope s.
func (c OAuthClient) AllowsScope(s OAuthScope) bool {
	for _, have := range c.Scopes {
		if have == s {
			return true
		}
	}
	return false
}

// oauthClientSecretBytes is the randomness of a client secret: 256 bits.
const oauthClientSecretBytes = 32

// NewOAuthClientSecret returns a fresh client secret, 32 random bytes in
// base64url without padding (43 characters), and the hash that is stored
// for it.
func NewOAuthClientSecret() (secret, hash string) {
	var b [oauthClientSecretBytes]byte
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[:])
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashOAuthClientSecret(secret)
}

// HashOAuthClientSecret is what the store keeps instead of a client
// secret. A secret holds 256 random bits, so a plain SHA-256 cannot be
// reversed by search (as with link tokens, HashLinkToken); a slow
// password hash would only slow down every token request.
func HashOAuthClientSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretMatches reports whether secret is c's, in time that does not
// depend on where a wrong secret differs. A public client matches no
// secret.
func (c OAuthClient) SecretMatches(secret string) bool {
	got := HashOAuthClientSecret(secret)
	if c.SecretHash == "" {
		// The same work as a comparison, and never a match.
		subtle.ConstantTimeCompare([]byte(got), []byte(got))
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(c.SecretHash)) == 1
}

// RotateSecret gives c a new secret at now and returns it: the old one no
// longer matches once c is stored. A public client has none:
// ErrPublicOAuthClient.
func (c *OAuthClient) RotateSecret(now time.Time) (string, error) {
	if c.IsPublic() {
		return "", ErrPublicOAuthClient
	}
	secret, hash := NewOAuthClientSecret()
	c.SecretHash, c.UpdatedAt = hash, now
	return secret, nil
}
