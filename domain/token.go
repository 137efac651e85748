package domain

import "time"

// Principal is the authenticated caller of a use case, taken from a verified
// access token. A nil *Principal is an anonymous caller.
type Principal struct {
	UserID   UserID
	Profiles Profiles
	// Session is the session the token belongs to. Tokens issued before
	// sessions were named in them have an empty Session.ID.
	Session Session
	// Token is set when the caller came with a personal access token
	// rather than a session's access token: what it may do is narrowed
	// to its scopes, and it never changes how the account signs in.
	Token *TokenGrant
}

// TokenGrant is what a personal access token allows its caller.
type TokenGrant struct {
	ID     PersonalTokenID
	Scopes []TokenScope
	// Account is the token's user as the lookup of the token read it,
	// in the same request and the same statement: the use case's check
	// of the caller takes it instead of reading the account again.
	Account User
}

// RequireScope refuses a caller with a personal access token whose
// scopes do not allow a route of scope (ErrInsufficientScope); a session
// is not narrowed.
func (p *Principal) RequireScope(scope TokenScope) error {
	if p == nil || p.Token == nil {
		return nil
	}
	if !(PersonalToken{Scopes: p.Token.Scopes}).Allows(scope) {
		return ErrInsufficientScope
	}
	return nil
}

// RequireInteractive refuses a caller with a personal access token
// (ErrInteractiveSessionRequired): changes of a password, an email, a
// second factor, a passkey, a session or a token need a person signed
// in.
func (p *Principal) RequireInteractive() error {
	if p != nil && p.Token != nil {
		return ErrInteractiveSessionRequired
	}
	return nil
}

// IsAdmin reports whether the caller holds ROLE_ADMIN.
func (p *Principal) IsAdmin() bool { return p != nil && p.Profiles.Has(ProfileAdmin) }

// AccessToken is a signed bearer token and its expiry.
type AccessToken struct {
	Token     string
	ExpiresAt time.Time
}

// RefreshFamily is one login session: every refresh token rotated from the
// login's first token belongs to it, and revoking it ends them all.
type RefreshFamily struct {
	ID        string
	UserID    UserID
	CreatedAt time.Time
	// ExpiresAt is the family's absolute end, however often it rotates.
	ExpiresAt time.Time
	// AMR is how the session signed in (CreatedAt is when): every access
	// token of the family says so, however often it rotates.
	AMR AMR
	// RevokedAt is set once the family is ended (logout, reuse, credential
	// change, user deletion).
	RevokedAt *time.Time
	// LastUsedAt is when a token of the family was last exchanged;
	// CreatedAt until the first refresh.
	LastUsedAt time.Time
	// IdleTimeout, when not zero, ends the family once that long has
	// passed since LastUsedAt: a session whose client ends it after a
	// time without use (the web pages', SessionLimits) ends in the store
	// too, without the client coming back to say so.
	IdleTimeout time.Duration
	// UserAgent and IP are the User-Agent (SessionUserAgent makes it) and
	// client IP of the sign-in that opened the session.
	UserAgent string
	IP        string
	// ClientID is the OpenID provider's client that the session was
	// granted to, with the Scopes granted; empty for a session of
	// userd's own (the API, the pages), whose tokens only userd's own
	// refresh takes.
	ClientID OAuthClientID
	Scopes   []OAuthScope
	// AuthTime is when the person signed in, when that was before
	// CreatedAt: a session granted to a client from a browser that
	// signed in earlier. Zero means CreatedAt.
	AuthTime time.Time
}

// SignedInAt is when the session's person signed in (auth_time).
func (f RefreshFamily) SignedInAt() time.Time {
	if f.AuthTime.IsZero() {
		return f.CreatedAt
	}
	return f.AuthTime
}

// ForClient reports whether the session was granted to an OpenID client.
func (f RefreshFamily) ForClient() bool { return f.ClientID != "" }

// Active reports whether tokens of the family may still be used at now:
// it is not revoked, not past its absolute end, and, with an idle
// timeout, used within it.
func (f RefreshFamily) Active(now time.Time) bool {
	return f.RevokedAt == nil && now.Before(f.ExpiresAt) &&
		(f.IdleTimeout <= 0 || now.Before(f.LastUsedAt.Add(f.IdleTimeout)))
}

// RotatableOwn reports whether t may be exchanged at now for a successor
// in a session of the app's own: t is unused and unexpired, and its
// family f is granted to no client and active at now. It is what
// ports.RefreshTokenStore.RotateOwn checks in the store.
func (t RefreshToken) RotatableOwn(f RefreshFamily, now time.Time) bool {
	return t.UsedAt == nil && now.Before(t.ExpiresAt) && !f.ForClient() && f.Active(now)
}

// RefreshToken is the stored record of one refresh token. The token itself is
// never stored: Hash is its SHA-256.
type RefreshToken struct {
	Hash      string
	FamilyID  string
	UserID    UserID
	IssuedAt  time.Time
	ExpiresAt time.Time
	// UsedAt is set when the token was exchanged for SuccessorHash.
	UsedAt        *time.Time
	SuccessorHash string
}
