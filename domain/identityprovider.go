package domain

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The identity providers people sign in with (contract-identity.md,
// section 2): a company's or a social OpenID provider, or GitHub. An
// operator registers each, by a slug that names it in its URLs; the
// person's account is linked to an identity (provider, subject) of one.

// IdentityProviderKind is how userd speaks to a provider.
type IdentityProviderKind string

// The kinds of provider.
const (
	// IdentityProviderOIDC is any OpenID provider, by its issuer:
	// discovery, its JWKS, an ID token.
	IdentityProviderOIDC IdentityProviderKind = "oidc"
	// IdentityProviderGitHub is GitHub (or GitHub Enterprise): OAuth 2
	// and its user and emails API.
	IdentityProviderGitHub IdentityProviderKind = "github"
)

// IdentityProviderKinds are the kinds, in the contract's order.
var IdentityProviderKinds = []IdentityProviderKind{IdentityProviderOIDC, IdentityProviderGitHub}

// GitHub's endpoints, the defaults of a provider of kind github; a GitHub
// Enterprise server sets its own.
const (
	GitHubAuthURL  = "https://github.com/login/oauth/authorize"
	GitHubTokenURL = "https://github.com/login/oauth/access_token" //nolint:gosec // G101: a URL, not a credential
	GitHubAPIURL   = "https://api.github.com"
)

// The default scopes asked of a provider, by kind.
var (
	DefaultOIDCProviderScopes   = []string{"openid", "email", "profile"}
	DefaultGitHubProviderScopes = []string{"read:user", "user:email"}
)

var (
	// ErrIdentityProviderNotFound is returned when no provider has the
	// slug.
	ErrIdentityProviderNotFound = errors.New("identity provider not found")
	// ErrIdentityProviderSlugTaken is returned when a provider with the
	// slug exists already.
	ErrIdentityProviderSlugTaken = errors.New("identity provider slug taken")
	// ErrIdentityNotFound is returned when the user has no identity of
	// the provider.
	ErrIdentityNotFound = errors.New("identity not found")
	// ErrIdentityTaken is returned when the identity (provider, subject)
	// is linked to an account already, or the account has an identity of
	// the provider already.
	ErrIdentityTaken = errors.New("identity linked already")
	// ErrLastSignInMethod is returned when removing an identity would
	// leave the account with no password, passkey or other identity to
	// sign in with (409 last_sign_in_method).
	ErrLastSignInMethod = errors.New("the account's last way to sign in")
)

// IdentityProvider is a provider people may sign in with.
type IdentityProvider struct {
	// Slug names it in its URLs (/auth/idp/{slug}/…): [a-z0-9-]{1,32}.
	Slug        string
	DisplayName string
	Kind        IdentityProviderKind
	// Issuer is an oidc provider's issuer URL; empty for github.
	Issuer   string
	ClientID string
	// ClientSecret is write-only: the API never returns it, the log
	// never shows it, and the store seals it at rest.
	ClientSecret string
	Scopes       []string
	// AllowedDomains, when not empty, are the only email domains that
	// may sign in (an exact match, lower case).
	AllowedDomains []string
	// AutoCreate gives an unknown person with a verified email an
	// account; TrustEmailVerified takes the provider's email_verified
	// (false: every email of it is unverified); a provider not Enabled
	// shows no button and starts no flow.
	AutoCreate         bool
	TrustEmailVerified bool
	Enabled            bool
	// AuthURL, TokenURL and APIURL are a github provider's endpoints
	// (GitHub's by default); empty for oidc.
	AuthURL   string
	TokenURL  string
	APIURL    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// AllowsEmailDomain reports whether an email of domain may sign in
// through p: always when p names no domain, else when it names this one.
func (p IdentityProvider) AllowsEmailDomain(email Email) bool {
	if len(p.AllowedDomains) == 0 {
		return true
	}
	at := strings.LastIndexByte(string(email), '@')
	return at >= 0 && slices.Contains(p.AllowedDomains, strings.ToLower(string(email)[at+1:]))
}

// UserIdentity links a user to their identity at a provider: the
// provider's subject for them, and the email it gave.
type UserIdentity struct {
	UserID     UserID
	Provider   string
	Subject    string
	Email      Email
	LinkedAt   time.Time
	LastUsedAt time.Time
}

// maxSlugLen is the longest slug.
const maxSlugLen = 32

// ParseIdentityProviderSlug checks a slug's form: [a-z0-9-]{1,32}. The
// message is meant for the client.
func ParseIdentityProviderSlug(s string) (string, string) {
	if s == "" || len(s) > maxSlugLen {
		return "", "must be 1 to 32 characters"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !slugByte(c) {
			return "", "may hold lower-case letters, digits and hyphens only"
		}
	}
	return s, ""
}

// slugByte reports whether c may stand in a slug.
func slugByte(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' }

// parseProviderURL checks a provider's URL (an issuer, GitHub
// Enterprise's endpoints): absolute, https, or http on a loopback host;
// no user, no fragment; an issuer no query either (OpenID Connect
// Discovery §3). The message is meant for the client.
func parseProviderURL(s string, issuer bool) (string, string) {
	if len(s) > MaxRedirectURILen || !uriChars(s) {
		return "", "must be a URL of at most 2000 characters, without spaces or characters beyond ASCII"
	}
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.Fragment != "" || strings.Contains(s, "#") {
		return "", "must be an absolute URL without user or fragment"
	}
	if issuer && u.RawQuery != "" {
		return "", "must have no query"
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
	default:
		return "", "must be https (http only on a loopback host)"
	}
	return s, ""
}
