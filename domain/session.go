package domain

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Authentication methods of RFC 8176, as an access token's amr claim names
// them.
const (
	// MethodPassword: a password.
	MethodPassword = "pwd"
	// MethodOTP: a one-time password (a TOTP code or a recovery code).
	MethodOTP = "otp"
	// MethodHardwareKey: a proof of possession of a hardware-bound key (a
	// passkey).
	MethodHardwareKey = "hwk"
	// MethodUser: the authenticator verified its user (a PIN or a
	// biometric): with a passkey, a second factor on the user's device.
	MethodUser = "user"
	// MethodMultiFactor: more than one factor was used.
	MethodMultiFactor = "mfa"
	// MethodFederated: another identity provider vouched for the person
	// (contract-identity.md, section 2).
	MethodFederated = "fed"
)

// Authentication context classes (NIST SP 800-63B assurance levels), as an
// access token's acr claim names them.
const (
	ACRSingleFactor = "aal1"
	ACRMultiFactor  = "aal2"
)

// AMR is the list of authentication methods by which a session signed in,
// in the order of the contract's examples.
type AMR []string

// The ways of signing in that the contract names.
var (
	AMRPassword        = AMR{MethodPassword}
	AMRPasswordOTP     = AMR{MethodPassword, MethodOTP, MethodMultiFactor}
	AMRPasswordPasskey = AMR{MethodPassword, MethodHardwareKey, MethodMultiFactor}
	AMRPasskeyVerified = AMR{MethodHardwareKey, MethodUser}
	AMRPasskey         = AMR{MethodHardwareKey}
	AMRFederated       = AMR{MethodFederated}
	AMREmailCode       = AMR{MethodOTP}
)

// SecondStepAMR is the amr of a session whose person first proved
// themselves by first (MethodPassword, MethodFederated, …; empty is a
// password) and then by the second factor second (MethodOTP or
// MethodHardwareKey): both, and mfa. A method is named once: an emailed
// code followed by a TOTP code is ["otp","mfa"] (RFC 8176 lists methods,
// not steps).
func SecondStepAMR(first, second string) AMR {
	if first == "" {
		first = MethodPassword
	}
	if first == second {
		return AMR{first, MethodMultiFactor}
	}
	return AMR{first, second, MethodMultiFactor}
}

// ACR is the assurance level of a session that signed in by a: aal2 when a
// second factor was used, or a passkey whose authenticator verified its
// user; aal1 otherwise.
func (a AMR) ACR() string {
	if slices.Contains(a, MethodMultiFactor) || slices.Contains(a, MethodUser) {
		return ACRMultiFactor
	}
	return ACRSingleFactor
}

// Clone returns a copy that the caller may change.
func (a AMR) Clone() AMR { return slices.Clone(a) }

// knownMethods are the values an AMR may hold.
var knownMethods = []string{MethodPassword, MethodOTP, MethodHardwareKey, MethodUser, MethodMultiFactor, MethodFederated}

// ParseAMR checks that every method of a stored or signed amr is known and
// none repeats; an empty one is AMRPassword, the only way sessions signed
// in before amr was recorded.
func ParseAMR(methods []string) (AMR, bool) {
	if len(methods) == 0 {
		return AMRPassword.Clone(), true
	}
	seen := make(map[string]bool, len(methods))
	for _, m := range methods {
		if !slices.Contains(knownMethods, m) || seen[m] {
			return nil, false
		}
		seen[m] = true
	}
	return slices.Clone(AMR(methods)), true
}

// Session is what an access token says of the session it belongs to: the
// refresh-token family (sid), when its sign-in happened (auth_time) and how
// (amr, from which acr follows). Refresh keeps the session's values: a
// rotated token never raises them.
type Session struct {
	ID       string
	AuthTime time.Time
	AMR      AMR
}

// RecentSignIn is how long after a single-factor sign-in its session may
// still add a passkey to an account with a second factor.
const RecentSignIn = 10 * time.Minute

// Strong reports whether the session may make a change that needs proof
// of a second factor at now: it signed in with one (acr aal2), or within
// RecentSignIn. A session of unknown age (a token older than the claims)
// is not recent.
func (s Session) Strong(now time.Time) bool {
	if s.AMR.ACR() == ACRMultiFactor {
		return true
	}
	return !s.AuthTime.IsZero() && now.Sub(s.AuthTime) <= RecentSignIn
}

// SessionOf is the session of a refresh-token family.
func SessionOf(f RefreshFamily) Session {
	return Session{ID: f.ID, AuthTime: f.SignedInAt(), AMR: f.AMR.Clone()}
}

// MaxUserAgentLen is how many characters of a User-Agent a session keeps.
const MaxUserAgentLen = 256

// SessionUserAgent is the User-Agent a session keeps of raw: valid UTF-8
// without control characters (each becomes a space), cut to
// MaxUserAgentLen characters. A header is the client's to fill; what is
// stored and shown back must be harmless text.
func SessionUserAgent(raw string) string {
	if keptAsIs(raw) {
		// Nearly every User-Agent: no copy (it is made on every request).
		return raw
	}
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(raw, "\uFFFD") {
		if n == MaxUserAgentLen {
			break
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// keptAsIs reports whether SessionUserAgent would return raw unchanged:
// valid UTF-8 (a U+FFFD that raw really holds is left to the copy) of at
// most MaxUserAgentLen characters, none a control character.
func keptAsIs(raw string) bool {
	n := 0
	for _, r := range raw {
		if n == MaxUserAgentLen || r == utf8.RuneError || unicode.IsControl(r) {
			return false
		}
		n++
	}
	return true
}

// sessionIDLen is the length of a session id: 16 random bytes in hex.
const sessionIDLen = 32

// ParseSessionID checks the form of a session id (the sid claim, the id of
// a refresh-token family): 32 lowercase hexadecimal characters, else
// ErrInvalidSessionID.
func ParseSessionID(s string) (string, error) {
	if len(s) != sessionIDLen {
		return "", ErrInvalidSessionID
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", ErrInvalidSessionID
		}
	}
	return s, nil
}

// SortSessions orders sessions as the contract lists them: newest first,
// ties by id, descending.
func SortSessions(fams []RefreshFamily) {
	slices.SortFunc(fams, func(a, b RefreshFamily) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}
