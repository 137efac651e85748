package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"time"
)

// LinkPurpose is what a link token may be used for, and nothing else.
type LinkPurpose string

// Link purposes.
const (
	LinkVerifyEmail   LinkPurpose = "email_verification"
	LinkResetPassword LinkPurpose = "password_reset"
	// LinkEmailSignIn signs its account in: the magic link, and the code
	// mailed with it (contract-identity.md section 4).
	LinkEmailSignIn LinkPurpose = "email_sign_in"
)

// Default lifetimes of link tokens (USERD_EMAIL_VERIFICATION_TTL,
// USERD_PASSWORD_RESET_TTL).
const (
	DefaultVerifyEmailTTL   = 24 * time.Hour
	DefaultResetPasswordTTL = 30 * time.Minute
	// DefaultEmailCodeTTL is the lifetime of an emailed sign-in code and
	// its link (USERD_EMAIL_CODE_TTL).
	DefaultEmailCodeTTL = 10 * time.Minute
)

// MaxEmailCodeFailures is how many wrong codes void an emailed sign-in
// code: the fifth wrong one does. With one code of a million alive at a
// time, a guesser has five chances in a million per message, and the
// mail budget and the per-email lock-out bound the messages and guesses.
const MaxEmailCodeFailures = 5

// LinkToken is the stored record of a token sent in a link. The token
// itself is never stored: Hash is its SHA-256. It is bound to one user, one
// purpose and the email it was sent to, and used once. A sign-in token
// without a UserID is a sign-up's (USERD_EMAIL_SIGNUP): sent to an email no
// account had, which its first use makes an account of.
type LinkToken struct {
	Hash      string
	Purpose   LinkPurpose
	UserID    UserID
	Email     Email
	CreatedAt time.Time
	ExpiresAt time.Time
	// Requested is true for a token sent because someone asked for it
	// (POST /auth/email-verification, /auth/password-reset, and the
	// verification link of a user's own change of email): those count
	// against the account's mail budget; tokens sent because of a
	// registration, an admin's change or by an admin do not.
	Requested bool
	// UsedAt is set once the token has been used (or voided).
	UsedAt *time.Time
	// CodeHash is, for an email sign-in token, the hash of the 6-digit
	// code mailed with the link (HashEmailCode); empty otherwise.
	CodeHash string
	// CodeFailures counts the wrong codes tried against CodeHash; the
	// MaxEmailCodeFailures-th voids the token.
	CodeFailures int
}

// NewLinkToken returns a fresh token, 32 random bytes in base64url without
// padding (43 characters), and the hash that is stored for it.
func NewLinkToken() (token, hash string) {
	var b [32]byte
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[:])
	token = base64.RawURLEncoding.EncodeToString(b[:])
	return token, HashLinkToken(token)
}

// HashLinkToken is what the store keeps instead of token. The token holds
// 256 random bits, so a plain SHA-256 cannot be reversed by search.
func HashLinkToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// WellFormedLinkToken reports whether s has the form NewLinkToken gives,
// so that anything else is refused before it reaches the store.
func WellFormedLinkToken(s string) bool {
	if len(s) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}

// NewEmailCode returns a fresh 6-digit sign-in code for email, uniformly
// drawn, and the hash that is stored for it.
func NewEmailCode(email Email) (code, hash string) {
	// crypto/rand.Int never fails with rand.Reader since Go 1.24; it panics instead.
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	code = fmt.Sprintf("%06d", n.Int64())
	return code, HashEmailCode(email, code)
}

// HashEmailCode is what the store keeps instead of a sign-in code sent to
// email. Six digits cannot be hidden from someone who reads the store and
// tries them all; the hash keeps the code out of backups and logs of the
// database, and binding it to the email makes one table of a million
// hashes serve one address only. The code dies within minutes anyway.
func HashEmailCode(email Email, code string) string {
	sum := sha256.Sum256([]byte("userd email code\x00" + string(email) + "\x00" + code))
	return hex.EncodeToString(sum[:])
}

// WellFormedEmailCode reports whether s is six ASCII digits, the form
// NewEmailCode gives.
func WellFormedEmailCode(s string) bool {
	if len(s) != 6 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Usable reports whether t may still be used at now by the account u: not
// used, not expired, and BelongsTo u.
func (t LinkToken) Usable(u User, now time.Time) bool {
	return t.UsedAt == nil && now.Before(t.ExpiresAt) && t.BelongsTo(u)
}

// BelongsTo reports whether t was sent to u as u is now: for its id, and to
// the email it has now (a token sent to an address the account no longer
// has is void).
func (t LinkToken) BelongsTo(u User) bool {
	return t.UserID == u.ID && t.Email == u.Email
}

// MailBudget is how many messages the request routes and the account's own
// changes of email may send an account: at most one per MinInterval and
// MaxPerHour in any hour. Zero turns a bound off.
type MailBudget struct {
	MinInterval time.Duration
	MaxPerHour  int
}

// DefaultMailBudget is the budget of USERD_MAIL_MIN_INTERVAL and
// USERD_MAIL_MAX_PER_HOUR when they are not set.
var DefaultMailBudget = MailBudget{MinInterval: time.Minute, MaxPerHour: 5}

// Allows reports whether one more requested message may be sent at now,
// given the requested messages of the last hour: how many, and when the
// last one was sent.
func (b MailBudget) Allows(now time.Time, lastHour int, last time.Time) bool {
	if b.MinInterval > 0 && !last.IsZero() && now.Sub(last) < b.MinInterval {
		return false
	}
	return b.MaxPerHour <= 0 || lastHour < b.MaxPerHour
}

// RetryAfter is how long after now a budget that does not allow one more
// message (Allows is false) surely will, given the same figures: the end
// of MinInterval after the last message, and, when the hour is full, the
// end of the last message's hour (by then every message counted has left
// the window, which includes its start: hence the second more). Without
// the time of the oldest message this is an upper bound, never too early.
func (b MailBudget) RetryAfter(now time.Time, lastHour int, last time.Time) time.Duration {
	var wait time.Duration
	if b.MinInterval > 0 && !last.IsZero() {
		wait = last.Add(b.MinInterval).Sub(now)
	}
	if b.MaxPerHour > 0 && lastHour >= b.MaxPerHour {
		wait = max(wait, last.Add(MailBudgetWindow+time.Second).Sub(now))
	}
	return max(wait, time.Second)
}
