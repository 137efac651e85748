package domain

import "time"

// PasskeyID identifies a stored passkey in the API: 24 lowercase
// hexadecimal characters, like a user id. The WebAuthn credential id,
// chosen by the authenticator and up to 1023 bytes, is kept apart.
type PasskeyID string

// NewPasskeyID returns a fresh passkey id.
func NewPasskeyID(now time.Time) PasskeyID { return PasskeyID(NewUserID(now)) }

// ParsePasskeyID checks the form of a passkey id from a path. A malformed
// one is ErrInvalidID, so it never reaches a query.
func ParsePasskeyID(s string) (PasskeyID, error) {
	if _, err := ParseUserID(s); err != nil {
		return "", err
	}
	return PasskeyID(s), nil
}

// Passkey is a WebAuthn credential registered to a user.
type Passkey struct {
	ID     PasskeyID
	UserID UserID
	// Name is the label the user gave it.
	Name string
	// CredentialID is the authenticator's id of the credential, unique
	// across users.
	CredentialID []byte
	// Credential is the relying party's record of the credential (public
	// key, flags, transports, AAGUID), in the passkey adapter's own form:
	// only that adapter reads it.
	Credential []byte
	// SignCount is the authenticator's signature counter at the last
	// use; 0 for authenticators that keep none.
	SignCount  uint32
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// Passkey names: 1–64 characters, the rules of a user's name otherwise.
const (
	PasskeyNameMaxLen = 64
	// DefaultPasskeyName names a passkey registered without a name.
	DefaultPasskeyName = "Passkey"
)

// ParsePasskeyName checks a passkey's name as ParseName does a user's,
// with a shorter bound; an empty name is DefaultPasskeyName.
func ParsePasskeyName(s string) (string, string) {
	if s == "" {
		return DefaultPasskeyName, ""
	}
	name, msg := ParseName(s)
	if msg != "" {
		return "", msg
	}
	if len([]rune(name)) > PasskeyNameMaxLen {
		return "", "must be at most 64 characters"
	}
	return name, ""
}

// CeremonyPurpose is what a passkey ceremony was begun for.
type CeremonyPurpose string

// Ceremony purposes.
const (
	// CeremonyRegistration adds a passkey to the signed-in user.
	CeremonyRegistration CeremonyPurpose = "registration"
	// CeremonyLogin signs in with a discoverable passkey.
	CeremonyLogin CeremonyPurpose = "login"
	// CeremonySecondFactor is the second step of a password login.
	CeremonySecondFactor CeremonyPurpose = "mfa"
)

// CeremonyTTL is how long a passkey ceremony may be finished.
const CeremonyTTL = 5 * time.Minute

// PasskeyCeremony is a begun WebAuthn ceremony, kept in the store so that
// any node can finish what another began, and used once.
type PasskeyCeremony struct {
	ID      string
	Purpose CeremonyPurpose
	// UserID is the user the ceremony is for: the registering user, or
	// the user of the mfaToken; empty for a discoverable login.
	UserID UserID
	// State is the passkey adapter's record of the ceremony (the
	// challenge and what it expects), opaque here.
	State     []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// PasskeyAssertion is what a verified passkey login says.
type PasskeyAssertion struct {
	// UserID is the user whose passkey signed.
	UserID UserID
	// CredentialID is the credential that signed.
	CredentialID []byte
	// SignCount is the authenticator's counter in this assertion.
	SignCount uint32
	// UserVerified is the UV flag: the authenticator checked its user.
	UserVerified bool
	// Credential is the adapter's record of the credential after this
	// use (flags may change), to be stored in place of the old one.
	Credential []byte
}
