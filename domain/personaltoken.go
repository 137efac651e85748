package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/big"
	"slices"
	"strings"
	"time"
)

// Personal access tokens (contract-identity.md, section 3): a long-lived
// credential a script holds to act as its user on /api/*, narrowed to
// its scopes, revocable, and never able to change how the account signs
// in.

// PersonalTokenPrefix starts every personal access token, so that a
// secret scanner finds one (docs/tokens.md).
const PersonalTokenPrefix = "udp_"

// The token's parts after PersonalTokenPrefix: 32 random bytes in base62,
// left-padded with '0' to 43 characters, then the CRC-32 (IEEE) of those
// 43 characters in base62, left-padded to 6.
const (
	personalTokenRandomLen   = 43
	personalTokenChecksumLen = 6
	// PersonalTokenLen is the length of a whole token: 53 characters.
	PersonalTokenLen = len(PersonalTokenPrefix) + personalTokenRandomLen + personalTokenChecksumLen
	// PersonalTokenPrefixLen is how much of the token after
	// PersonalTokenPrefix the lists show (prefix), to tell tokens apart.
	PersonalTokenPrefixLen = 8
)

// base62Alphabet is the tokens' alphabet, in the contract's order.
const base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// TokenScope is what a personal access token may do.
type TokenScope string

// The scopes of a personal access token.
const (
	// ScopeUsersRead allows the GET routes.
	ScopeUsersRead TokenScope = "users:read"
	// ScopeUsersWrite allows every route a token may use.
	ScopeUsersWrite TokenScope = "users:write"
)

// TokenScopes are the scopes, in the contract's order.
var TokenScopes = []TokenScope{ScopeUsersRead, ScopeUsersWrite}

// The limits of personal access tokens.
const (
	// MaxLivePersonalTokens is how many live (neither revoked nor
	// expired) tokens a user may hold; the next is ErrTokenLimit.
	MaxLivePersonalTokens = 50
	// DefaultPersonalTokenDays is a token's lifetime when none is asked;
	// MinPersonalTokenDays and MaxPersonalTokenDays bound one asked.
	DefaultPersonalTokenDays = 90
	MinPersonalTokenDays     = 1
	MaxPersonalTokenDays     = 365
	// PersonalTokenNameMaxLen bounds a token's name (runes).
	PersonalTokenNameMaxLen = 100
	// PersonalTokenTouchInterval is how stale a token's LastUsedAt may
	// grow before a use records it again: at most one write a minute per
	// token.
	PersonalTokenTouchInterval = time.Minute
)

var (
	// ErrTokenLimit is returned when the user holds
	// MaxLivePersonalTokens live tokens already (409 token_limit).
	ErrTokenLimit = errors.New("too many personal access tokens")
	// ErrPersonalTokenNotFound is returned when no live token of the
	// user has the id.
	ErrPersonalTokenNotFound = errors.New("personal access token not found")
	// ErrInsufficientScope is returned when a personal access token's
	// scopes do not allow the route (403 insufficient_scope).
	ErrInsufficientScope = errors.New("the token's scopes do not allow this")
	// ErrInteractiveSessionRequired is returned when a personal access
	// token asks for what only a signed-in person may do: change a
	// password, an email, a second factor, a passkey, a session or a
	// token (403 interactive_session_required).
	ErrInteractiveSessionRequired = errors.New("an interactive session is required")
)

// PersonalTokenID names a personal access token: 32 lowercase hex
// characters.
type PersonalTokenID string

// NewPersonalTokenID returns a fresh id.
func NewPersonalTokenID() PersonalTokenID {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return PersonalTokenID(hex.EncodeToString(b))
}

// ParsePersonalTokenID checks an id's form: 32 lowercase hex characters.
func ParsePersonalTokenID(s string) (PersonalTokenID, bool) {
	if len(s) != 32 || strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'f') }) >= 0 {
		return "", false
	}
	return PersonalTokenID(s), true
}

// PersonalToken is a personal access token as stored: never the token
// itself, only its hash and the prefix the lists show.
type PersonalToken struct {
	ID     PersonalTokenID
	UserID UserID
	Name   string
	Scopes []TokenScope
	// Hash is HashPersonalToken of the token.
	Hash string
	// Prefix is the token's first PersonalTokenPrefixLen characters after
	// PersonalTokenPrefix.
	Prefix    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// LastUsedAt is the last use, kept to the minute; zero when never
	// used.
	LastUsedAt time.Time
	// RevokedAt is set once the token was revoked.
	RevokedAt *time.Time
}

// Live reports whether the token may be used at now.
func (t PersonalToken) Live(now time.Time) bool {
	return t.RevokedAt == nil && now.Before(t.ExpiresAt)
}

// Allows reports whether the token's scopes allow a route of scope.
// users:write allows every route a token may use, users:read the GET
// routes.
func (t PersonalToken) Allows(scope TokenScope) bool {
	return slices.Contains(t.Scopes, ScopeUsersWrite) || slices.Contains(t.Scopes, scope)
}

// NewPersonalTokenSecret returns a fresh token in the contract's format.
func NewPersonalTokenSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return PersonalTokenFromBytes(b)
}

// PersonalTokenFromBytes is the token of 32 random bytes: the bytes in
// base62, left-padded to 43 characters, and their CRC-32 in base62,
// left-padded to 6, after the prefix.
func PersonalTokenFromBytes(random []byte) string {
	body := base62(new(big.Int).SetBytes(random), personalTokenRandomLen)
	sum := crc32.ChecksumIEEE([]byte(body))
	return PersonalTokenPrefix + body + base62(new(big.Int).SetUint64(uint64(sum)), personalTokenChecksumLen)
}

// WellFormedPersonalToken reports whether s has the form of a personal
// access token and its checksum matches: one that does not is refused
// before any store is asked.
func WellFormedPersonalToken(s string) bool {
	if len(s) != PersonalTokenLen || !strings.HasPrefix(s, PersonalTokenPrefix) {
		return false
	}
	rest := s[len(PersonalTokenPrefix):]
	for i := range len(rest) {
		if strings.IndexByte(base62Alphabet, rest[i]) < 0 {
			return false
		}
	}
	body, sum := rest[:personalTokenRandomLen], rest[personalTokenRandomLen:]
	return base62(new(big.Int).SetUint64(uint64(crc32.ChecksumIEEE([]byte(body)))), personalTokenChecksumLen) == sum
}

// IsPersonalToken reports whether a bearer credential is meant as a
// personal access token (its prefix), well formed or not.
func IsPersonalToken(s string) bool { return strings.HasPrefix(s, PersonalTokenPrefix) }

// HashPersonalToken is what the store keeps of a token: its SHA-256 in
// hex. The token holds 256 random bits, so no salt or slow hash is
// needed.
func HashPersonalToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// PersonalTokenPrefixOf is the prefix the lists show of token.
func PersonalTokenPrefixOf(token string) string {
	return token[len(PersonalTokenPrefix) : len(PersonalTokenPrefix)+PersonalTokenPrefixLen]
}

// base62 writes n in base62, left-padded with '0' to width.
func base62(n *big.Int, width int) string {
	var out []byte
	base := big.NewInt(62)
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, base, mod)
		out = append(out, base62Alphabet[mod.Int64()])
	}
	for len(out) < width {
		out = append(out, '0')
	}
	slices.Reverse(out)
	return string(out)
}

// ParseTokenScopes checks a token's scopes: at least one, each known,
// none twice; they are returned in the contract's order. The message is
// meant for the client.
func ParseTokenScopes(raw []string) ([]TokenScope, string) {
	if len(raw) == 0 {
		return nil, "must name at least one scope: users:read, users:write"
	}
	seen := map[TokenScope]bool{}
	for _, s := range raw {
		sc := TokenScope(s)
		if !slices.Contains(TokenScopes, sc) {
			return nil, "must be users:read or users:write"
		}
		if seen[sc] {
			return nil, "must not name a scope twice"
		}
		seen[sc] = true
	}
	var out []TokenScope
	for _, sc := range TokenScopes {
		if seen[sc] {
			out = append(out, sc)
		}
	}
	return out, ""
}
