package domain

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// User is a registered account. PasswordHash is a PHC (argon2id) or modular
// crypt (bcrypt) string and must never leave the service; it is empty for
// an account made by a sign-in through another identity provider, until
// its person sets a password (a reset).
type User struct {
	ID           UserID
	Name         string
	Email        Email
	PasswordHash string
	Profiles     Profiles
	// EmailVerified is true once the user proved control of the current
	// address (a verification link, or a completed password reset); any
	// change of email clears it.
	EmailVerified bool
	// Disabled accounts cannot sign in, refresh or use a token; only an
	// admin changes it.
	Disabled bool
	// MFAEnabled is true while the account has a confirmed TOTP factor or
	// a passkey; the use cases that change factors keep it so, in the
	// same transaction.
	MFAEnabled bool
	// Metadata is what apps keep on the account that its user may change
	// too; AppMetadata, what only an admin changes (as Profiles).
	Metadata    Metadata
	AppMetadata Metadata
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// IsAdmin reports whether the user holds ROLE_ADMIN.
func (u *User) IsAdmin() bool { return u.Profiles.Has(ProfileAdmin) }

// IsEnabledAdmin reports whether the user is an admin who can act as one:
// the accounts the last-admin rule counts.
func (u *User) IsEnabledAdmin() bool { return u.IsAdmin() && !u.Disabled }

// Addressee is the name a message to u's email may carry, in its greeting
// and in the display name of its To header: the account's name once the
// email is verified, none before. Until then the name is text that
// whoever registered the address, or changed the account to it, chose,
// and the address may not be theirs: a name such as "call +1 555 0100"
// would reach a stranger in a message that userd signs.
func (u *User) Addressee() string {
	if !u.EmailVerified {
		return ""
	}
	return u.Name
}

// Name limits, counted in characters after trimming.
const (
	NameMinLen = 1
	NameMaxLen = 100
)

// ParseName trims s and checks its length and that it holds no control
// characters. The message is meant for the client.
func ParseName(s string) (string, string) {
	s = strings.TrimSpace(s)
	if !utf8.ValidString(s) {
		return "", "must be valid UTF-8"
	}
	n := utf8.RuneCountInString(s)
	if n < NameMinLen {
		return "", "must not be empty"
	}
	if n > NameMaxLen {
		return "", "must be at most 100 characters"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", "must not contain control characters"
		}
		// Format characters (bidi overrides, zero-width spaces and
		// joiners, ...) are invisible: "admin\u200b" looks like "admin",
		// and a right-to-left override makes a name read backwards in a
		// console or an email.
		if unicode.Is(unicode.Cf, r) {
			return "", "must not contain invisible formatting characters"
		}
	}
	return s, ""
}
