package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// Errors of second factors.
var (
	// ErrInvalidMFACode: a TOTP or recovery code that is wrong, malformed,
	// used already, or (TOTP) of a time step accepted before.
	ErrInvalidMFACode = errors.New("invalid code")
	// ErrMFACodeRejected: a wrong code in the second step of a login. The
	// same words as ErrInvalidMFACode, but it answers a sign-in (401), not
	// a change of factors (400).
	ErrMFACodeRejected = errors.New("invalid code")
	// ErrRecentSignInRequired: the change needs a session that signed in
	// with a second factor, or recently: adding a passkey to an account
	// that has a second factor, with an older single-factor session.
	ErrRecentSignInRequired = errors.New("sign in again with a second factor to do this")
	// ErrInvalidMFAToken: an mfaToken that is unknown, expired, used, or
	// voided by too many wrong codes. One error for all of them.
	ErrInvalidMFAToken = errors.New("invalid or expired mfa token")
	// ErrMFAAlreadyEnabled: the account has a confirmed TOTP factor already.
	ErrMFAAlreadyEnabled = errors.New("a TOTP factor is enabled already")
	// ErrMFANotEnabled: the account has no factor of the kind the request
	// acts on (no pending TOTP factor to confirm, no TOTP factor to remove,
	// no second factor whose recovery codes could be renewed).
	ErrMFANotEnabled = errors.New("no such second factor is enabled")
	// ErrInvalidPasskey: a passkey ceremony that failed: unknown, used or
	// expired ceremony, a bad signature, origin, RP id or challenge, an
	// unknown credential, or a signature counter that went backwards.
	ErrInvalidPasskey = errors.New("passkey verification failed")
	// ErrPasskeyNotFound: the user has no passkey with that id.
	ErrPasskeyNotFound = errors.New("passkey not found")
	// ErrPasskeyExists: the credential is registered already (to this
	// user or another).
	ErrPasskeyExists = errors.New("passkey already registered")
	// ErrMalformedPasskeyCredential: the credential JSON is not a
	// WebAuthn response at all (a client error, unlike ErrInvalidPasskey).
	ErrMalformedPasskeyCredential = errors.New("malformed passkey credential")
)

// MFA methods that the second step of a login may use, as mfaMethods names
// them.
const (
	MFAMethodTOTP         = "totp"
	MFAMethodRecoveryCode = "recovery_code"
	MFAMethodPasskey      = "passkey"
)

// TOTP parameters of the contract (RFC 6238): SHA-1, 6 digits, 30 s steps,
// codes of the step before and after accepted too.
const (
	TOTPPeriod    = 30 * time.Second
	TOTPDigits    = 6
	TOTPSkewSteps = 1
	// TOTPSecretSize is the secret's length in bytes (160 bits, RFC 4226's
	// recommendation for HMAC-SHA-1).
	TOTPSecretSize = 20
)

// TOTPFactor is a user's TOTP factor, pending until a first code confirms
// it. Secret is the shared key in clear: stores seal it at rest.
type TOTPFactor struct {
	UserID      UserID
	Secret      []byte
	CreatedAt   time.Time
	ConfirmedAt *time.Time
	// LastStep is the time step (Unix time / 30 s) of the last code
	// accepted, 0 before any: a code of this step or an earlier one is
	// never accepted again.
	LastStep int64
}

// Confirmed reports whether the factor is active.
func (f TOTPFactor) Confirmed() bool { return f.ConfirmedAt != nil }

// TOTPStep is the time step of t.
func TOTPStep(t time.Time) int64 { return t.Unix() / int64(TOTPPeriod/time.Second) }

// ParseTOTPCode checks that s is exactly TOTPDigits ASCII digits: codes
// with spaces, signs or other lengths never reach a comparison.
func ParseTOTPCode(s string) (string, bool) {
	if len(s) != TOTPDigits {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	return s, true
}

// Recovery codes: RecoveryCodeCount codes of two groups of
// recoveryGroupLen characters from recoveryAlphabet, 50 random bits each.
const (
	RecoveryCodeCount = 10
	recoveryGroupLen  = 5
	// recoveryAlphabet is Crockford's base32 in lower case: no i, l, o or
	// u, so that no two characters look alike on paper.
	recoveryAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"
)

// NewRecoveryCodes returns RecoveryCodeCount fresh codes from crypto/rand.
func NewRecoveryCodes() []string {
	codes := make([]string, RecoveryCodeCount)
	for i := range codes {
		var b [2 * recoveryGroupLen]byte
		_, _ = rand.Read(b[:])
		var sb strings.Builder
		for j, c := range b {
			if j == recoveryGroupLen {
				sb.WriteByte('-')
			}
			// 256 is a multiple of 32: no bias.
			sb.WriteByte(recoveryAlphabet[int(c)%len(recoveryAlphabet)])
		}
		codes[i] = sb.String()
	}
	return codes
}

// ParseRecoveryCode checks that s is a recovery code (two groups of five
// letters or digits joined by a hyphen, any letter case) and returns it in
// lower case. Letters outside the alphabet are allowed (a code is compared
// by hash, never decoded), spaces are not.
func ParseRecoveryCode(s string) (string, bool) {
	if len(s) != 2*recoveryGroupLen+1 || s[recoveryGroupLen] != '-' {
		return "", false
	}
	s = strings.ToLower(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == recoveryGroupLen {
			continue
		}
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return "", false
		}
	}
	return s, true
}

// HashRecoveryCode is what the store keeps instead of a user's recovery
// code: SHA-256 over the user id and the code in lower case. The user id
// salts it, so that a guess made against the table is a guess at one
// user's codes; a code holds 50 random bits and dies at its first use.
func HashRecoveryCode(user UserID, code string) string {
	sum := sha256.Sum256([]byte("userd recovery code\x00" + string(user) + "\x00" + strings.ToLower(code)))
	return hex.EncodeToString(sum[:])
}

// MFASummary is what GET /api/users/me/mfa tells.
type MFASummary struct {
	TOTP              bool
	Passkeys          int
	RecoveryCodesLeft int
}

// Enabled reports whether the account has a second factor: a confirmed
// TOTP factor or a passkey (User.MFAEnabled).
func (s MFASummary) Enabled() bool { return s.TOTP || s.Passkeys > 0 }

// Methods are the second-step methods the account can use.
func (s MFASummary) Methods() []string {
	var m []string
	if s.TOTP {
		m = append(m, MFAMethodTOTP)
	}
	if s.RecoveryCodesLeft > 0 {
		m = append(m, MFAMethodRecoveryCode)
	}
	if s.Passkeys > 0 {
		m = append(m, MFAMethodPasskey)
	}
	return m
}

// Limits of the second step of a login.
const (
	// MFAChallengeTTL is how long an mfaToken may be used.
	MFAChallengeTTL = 5 * time.Minute
	// MFAChallengeMaxFailures is the number of wrong codes that voids an
	// mfaToken.
	MFAChallengeMaxFailures = 5
)

// MFAChallenge is the stored record of an mfaToken: a login whose password
// was right and whose second factor is awaited. The token itself is never
// stored: Hash is its SHA-256.
type MFAChallenge struct {
	Hash   string
	UserID UserID
	// Email is the address the password was checked for: wrong codes
	// count against its lock-out.
	Email Email
	// FirstFactor is the method that proved the person before the second
	// step (MethodFederated, …); empty is a password. The session the
	// second step opens records both (SecondStepAMR).
	FirstFactor string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	// Failures counts wrong codes; at MFAChallengeMaxFailures the token is
	// void.
	Failures int
	// UsedAt is set once the token was used or voided.
	UsedAt *time.Time
}

// Usable reports whether the token may still be used at now.
func (c MFAChallenge) Usable(now time.Time) bool {
	return c.UsedAt == nil && now.Before(c.ExpiresAt) && c.Failures < MFAChallengeMaxFailures
}

// NewMFAToken returns a fresh mfaToken, 32 random bytes in base64url
// without padding (43 characters), and the hash that is stored for it. Its
// form and hash are those of link tokens.
func NewMFAToken() (token, hash string) { return NewLinkToken() }

// HashMFAToken is what the store keeps instead of an mfaToken.
func HashMFAToken(token string) string { return HashLinkToken(token) }

// WellFormedMFAToken reports whether s has the form NewMFAToken gives.
func WellFormedMFAToken(s string) bool { return WellFormedLinkToken(s) }

// NewCeremonyID returns the id of a passkey ceremony: 32 random bytes in
// base64url, so that one ceremony cannot be guessed from another.
func NewCeremonyID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
