package domain

import (
	"errors"
	"strings"
	"time"
)

// Sentinel errors returned by use cases and ports. The HTTP adapter maps each
// to a status and a stable problem code; anything not listed here is a 500.
var (
	// ErrInvalidID: a user id that is not 24 lowercase hex characters.
	ErrInvalidID = errors.New("invalid user id")
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
	// ErrIDMismatch: the id in a body differs from the id in the path.
	ErrIDMismatch = errors.New("body id does not match path id")
	// ErrConflictingFields: both profiles and the legacy role were sent.
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
	// ErrCurrentPasswordRequired: configuration demands currentPassword for
	// this change and none was sent.
	ErrCurrentPasswordRequired = errors.New("current password required")
	// ErrKeyExists: a server key with that id is stored already (another
	// node created it first).
	ErrKeyExists = errors.New("key already exists")
	// ErrUnavailable: the store is temporarily unable to serve (busy,
	// unreachable); the request may be retried.
	ErrUnavailable = errors.New("service temporarily unavailable")
)

// TooManyAttemptsError refuses a login for an email that failed too often.
type TooManyAttemptsError struct {
	// RetryAfter is how long until the next attempt will be considered.
	RetryAfter time.Duration
}

func (e *TooManyAttemptsError) Error() string {
	return "too many failed login attempts"
}

// FieldError describes one invalid field of a request.
type FieldError struct {
	Field   string
	Message string
}

// ValidationError collects every invalid field of one request, so that a
// client can fix them all at once.
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

// ParameterError rejects a query parameter (limit, after) of a request.
type ParameterError struct {
	Name   string
	Reason string
}

func (e *ParameterError) Error() string {
	return "invalid parameter " + e.Name + ": " + e.Reason
}
