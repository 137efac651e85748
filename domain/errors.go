package domain

import (
	"errors"
	"strings"
	"time"
)

// Sentinel errors returned by use cases and ports, in domain words. What
// they mean to a client (an HTTP status and a problem code) is decided by
// the driving adapter alone; an error that is none of these (or the typed
// errors below) is unexpected.
var (
	// ErrInvalidID: a user id that is not 24 lowercase hex characters.
	ErrInvalidID = errors.New("invalid user id")
	// ErrInvalidSessionID: a session id that is not 32 lowercase hex
	// characters.
	ErrInvalidSessionID = errors.New("invalid session id")
	// ErrSessionNotFound: the user has no active session with the id.
	ErrSessionNotFound = errors.New("session not found")
	// ErrUserNotFound: no user has the given id or email.
	ErrUserNotFound = errors.New("user not found")
	// ErrEmailTaken: another user already has the normalised email.
	ErrEmailTaken = errors.New("email already registered")
	// ErrInvalidCredentials: wrong email, wrong password, or a wrong current
	// password on update. Deliberately one error for all of them.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrUnauthenticated: the operation needs a signed-in caller.
	ErrUnauthenticated = errors.New("authentication required")
	// ErrForbidden: the caller is known but may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrIDMismatch: an update names another account than the one it is
	// applied to.
	ErrIDMismatch = errors.New("the id given is not the id of the account changed")
	// ErrConflictingFields: both profiles and the legacy role were given
	// for a new account.
	ErrConflictingFields = errors.New("profiles and role are mutually exclusive")
	// ErrInvalidProfile: a profile or role outside the known set.
	ErrInvalidProfile = errors.New("unknown profile")
	// ErrInvalidToken: a missing, malformed, expired or otherwise unusable
	// access token.
	ErrInvalidToken = errors.New("invalid access token")
	// ErrRefreshTokenInvalid: a refresh token that is unknown, expired,
	// malformed or belongs to a revoked family.
	ErrRefreshTokenInvalid = errors.New("invalid refresh token")
	// ErrRefreshTokenReused: a refresh token presented again outside the grace
	// window; its whole family has been revoked.
	ErrRefreshTokenReused = errors.New("refresh token reused")
	// ErrRefreshFamilyRevoked: a rotation raced a revocation of the family.
	ErrRefreshFamilyRevoked = errors.New("refresh token family revoked")
	// ErrRefreshFamilyLapsed: a rotation at a time when the family was no
	// longer active: past its absolute end, or its idle limit.
	ErrRefreshFamilyLapsed = errors.New("refresh token family lapsed")
	// ErrLastAdmin: the change would leave no enabled admin (disabling,
	// demoting or deleting the last one).
	ErrLastAdmin = errors.New("the last enabled admin cannot be disabled, demoted or deleted")
	// ErrAccountDisabled: the account is disabled; the password was right.
	ErrAccountDisabled = errors.New("account disabled")
	// ErrUserDisabled: an admin's action that needs an enabled account
	// (sending it a reset link) names a disabled one. Unlike
	// ErrAccountDisabled, the account is not the caller's.
	ErrUserDisabled = errors.New("the user is disabled")
	// ErrEmailNotVerified: the deployment requires a verified email to sign
	// in and the account's is not; the password was right.
	ErrEmailNotVerified = errors.New("email not verified")
	// ErrInvalidLinkToken: a link token that is unknown, expired, used, of
	// another purpose, or sent to an email the account no longer has. One
	// error for all of them.
	ErrInvalidLinkToken = errors.New("invalid or expired token")
	// ErrInvalidEmailCode: an emailed sign-in code or magic link that is
	// wrong, unknown, used, expired, voided by a newer one or by wrong
	// codes, or malformed. One error for all of them.
	ErrInvalidEmailCode = errors.New("invalid or expired code")
	// ErrEmailSignInOff: the deployment turned the sign-in by email off
	// (USERD_EMAIL_SIGN_IN=false); its routes are not there.
	ErrEmailSignInOff = errors.New("sign-in by email is off")
	// ErrMailRejected: the mail server refused a message for good (a 5xx
	// answer): sending it again would not help.
	ErrMailRejected = errors.New("mail rejected")
	// ErrKeyExists: a server key with that id is stored already (another
	// node created it first).
	ErrKeyExists = errors.New("key already exists")
	// ErrUnavailable: the store is temporarily unable to serve (busy,
	// unreachable); the request may be retried.
	ErrUnavailable = errors.New("service temporarily unavailable")
)

// TooManyAttemptsError refuses a password check for an email that failed
// too often.
type TooManyAttemptsError struct {
	// RetryAfter is how long until the next attempt will be considered.
	RetryAfter time.Duration
}

func (e *TooManyAttemptsError) Error() string {
	return "too many failed login attempts"
}

// MailBudgetError refuses a change of email that would send the account
// more messages than its mail budget allows (MailBudget): changed back and
// forth, an email would otherwise mail any address as often as asked.
type MailBudgetError struct {
	// RetryAfter is how long until the budget surely allows the change.
	RetryAfter time.Duration
}

func (e *MailBudgetError) Error() string {
	return "the account's mail budget is spent"
}

// FieldError describes one invalid field of what was given.
type FieldError struct {
	Field   string
	Message string
}

// ValidationError collects every invalid field of one input, so that the
// caller can fix them all at once.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "validation failed: " + strings.Join(parts, "; ")
}

// Add records a problem with field.
func (e *ValidationError) Add(field, message string) {
	e.Fields = append(e.Fields, FieldError{Field: field, Message: message})
}

// Err returns e when it holds at least one field error, else nil.
func (e *ValidationError) Err() error {
	if e == nil || len(e.Fields) == 0 {
		return nil
	}
	return e
}
