package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"time"
)

// The authorization requests of the provider's code flow
// (contract-identity.md, section 1): what /oauth2/authorize was asked,
// kept in the store from that request until its code is exchanged, so
// that a flow begun on one node finishes on any other.

// Lifetimes of a flow.
const (
	// AuthRequestTTL is how long a person has to sign in and consent
	// once an app sent them to /oauth2/authorize.
	AuthRequestTTL = 30 * time.Minute
	// AuthCodeTTL is how long an authorization code may be exchanged
	// (the contract's 60 s).
	AuthCodeTTL = 60 * time.Second
)

var (
	// ErrAuthRequestNotFound means that no live authorization request
	// has the id (unknown, expired, or finished).
	ErrAuthRequestNotFound = errors.New("authorization request not found")
	// ErrAuthCodeInvalid means that no authorization request has a code
	// with the hash, or that its code expired.
	ErrAuthCodeInvalid = errors.New("authorization code invalid")
	// ErrAuthCodeReused means that the code was exchanged already.
	ErrAuthCodeReused = errors.New("authorization code used already")
	// ErrGrantNotFound means that the user gave the client no grant.
	ErrGrantNotFound = errors.New("grant not found")
)

// The prompt values of OpenID Connect Core §3.1.2.1 that the provider acts
// on.
const (
	PromptNone    = "none"
	PromptLogin   = "login"
	PromptConsent = "consent"
)

// AuthRequest is one authorization request of the code flow.
type AuthRequest struct {
	// ID names the request in the pages' URLs: 32 random bytes in
	// base64url (NewAuthRequestID).
	ID          string
	ClientID    OAuthClientID
	RedirectURI string
	Scopes      []OAuthScope
	State       string
	Nonce       string
	// CodeChallenge is the S256 challenge (PKCE) the code's exchange must
	// answer.
	CodeChallenge string
	// Prompt holds the prompt values asked (PromptNone, PromptLogin,
	// PromptConsent). MaxAge, when not nil, is the oldest sign-in the
	// client accepts; ACRValues the assurance levels asked, best first.
	Prompt    []string
	MaxAge    *time.Duration
	ACRValues []string
	LoginHint string
	CreatedAt time.Time
	ExpiresAt time.Time

	// Set by AttachCode once the person signed in (and consented): who,
	// when and how they signed in, the browser session they signed in
	// with, and the code's hash and end.
	UserID           UserID
	AuthTime         time.Time
	AMR              AMR
	BrowserSessionID string
	CodeHash         string
	CodeExpiresAt    time.Time
	// CodeUsedAt is set by the code's exchange, with IssuedSessionID:
	// the session (refresh family, sid) that exchange opened, which a
	// second use of the code ends.
	CodeUsedAt      *time.Time
	IssuedSessionID string
}

// Live reports whether the request may still go on at now.
func (r AuthRequest) Live(now time.Time) bool { return now.Before(r.ExpiresAt) }

// HasPrompt reports whether the request asked for prompt value p.
func (r AuthRequest) HasPrompt(p string) bool { return slices.Contains(r.Prompt, p) }

// NewAuthRequestID returns a fresh request id: 32 random bytes, base64url.
func NewAuthRequestID() string { return randomToken() }

// NewAuthCode returns a fresh authorization code and its hash, which is
// what the store keeps: 32 random bytes, base64url; a fast hash suffices
// for 256 random bits, as for the mailed links.
func NewAuthCode() (code, hash string) {
	code = randomToken()
	return code, HashAuthCode(code)
}

// HashAuthCode returns what the store keeps for code.
func HashAuthCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Grant is a user's consent to a client: the scopes the client may have
// without asking again (a later request for the same or fewer scopes
// skips the consent page).
type Grant struct {
	UserID    UserID
	ClientID  OAuthClientID
	Scopes    []OAuthScope
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Covers reports whether the grant allows every scope of asked.
func (g Grant) Covers(asked []OAuthScope) bool { return SubsetOfScopes(asked, g.Scopes) }

// UnionScopes returns the scopes of a and b, each once, in the order of
// OAuthScopes.
func UnionScopes(a, b []OAuthScope) []OAuthScope {
	out := make([]OAuthScope, 0, len(OAuthScopes))
	for _, s := range OAuthScopes {
		if slices.Contains(a, s) || slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// ErrRedirectURINotRegistered means that an authorization request's
// redirect_uri is not one its client registered. Like an unknown client,
// it is answered with a page, never a redirect: nothing proves the URI is
// the client's.
var ErrRedirectURINotRegistered = errors.New("redirect_uri not registered for the client")
