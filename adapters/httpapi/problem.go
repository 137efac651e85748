package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// problemContentType is the media type of every error body (RFC 9457).
const problemContentType = "application/problem+json"

// problem is an RFC 9457 problem details object plus our stable code and,
// for validation failures, the invalid fields. headers are sent with it.
type problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail"`
	Instance string       `json:"instance"`
	Code     string       `json:"code"`
	Errors   []fieldError `json:"errors,omitempty"`
	// MFAToken and MFAMethods are the extension members of mfa_required:
	// the token of the login's second step, and the methods it may use.
	MFAToken   string   `json:"mfaToken,omitempty"`
	MFAMethods []string `json:"mfaMethods,omitempty"`

	headers map[string]string
}

// fieldError is one entry of a problem's errors array.
type fieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// requestError is a problem found by the adapter itself (malformed JSON, a
// bad query parameter), carried through the same path as domain errors.
type requestError struct{ p problem }

func (e *requestError) Error() string { return e.p.Code + ": " + e.p.Detail }

func badRequest(code, detail string) error {
	return &requestError{p: problem{Status: http.StatusBadRequest, Code: code, Detail: detail}}
}

func tooLarge(limit int64) problem {
	return problem{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large",
		Detail: fmt.Sprintf("the request body exceeds %d bytes", limit)}
}

func unauthorized(challenge string) problem {
	return problem{Status: http.StatusUnauthorized, Code: "unauthorized",
		Detail: "a valid bearer access token is required", headers: map[string]string{"WWW-Authenticate": challenge}}
}

func internalProblem() problem {
	return problem{Status: http.StatusInternalServerError, Code: "internal",
		Detail: "an unexpected error occurred; the request id identifies it in our logs"}
}

// sentinels maps each domain sentinel error to its answer. It is the one
// place where the HTTP meaning of a domain error is decided, together with
// the typed errors handled in problemOf.
var sentinels = []struct {
	err     error
	problem problem
}{
	{domain.ErrInvalidID, problem{Status: http.StatusBadRequest, Code: "invalid_id",
		Detail: "a user id is 24 lowercase hexadecimal characters"}},
	{domain.ErrInvalidSessionID, problem{Status: http.StatusBadRequest, Code: "invalid_id",
		Detail: "a session id is 32 lowercase hexadecimal characters"}},
	{domain.ErrInvalidOAuthClientID, problem{Status: http.StatusBadRequest, Code: "invalid_id",
		Detail: "a client id is 24 lowercase hexadecimal characters"}},
	{domain.ErrIDMismatch, problem{Status: http.StatusBadRequest, Code: "id_mismatch",
		Detail: "the id in the body does not match the id in the path"}},
	{domain.ErrConflictingFields, problem{Status: http.StatusBadRequest, Code: "conflicting_fields",
		Detail: "send either profiles or role, not both"}},
	{domain.ErrInvalidProfile, problem{Status: http.StatusBadRequest, Code: "invalid_profile",
		Detail: "known profiles are ROLE_CUSTOMER and ROLE_ADMIN"}},
	{domain.ErrUnauthenticated, unauthorized(challengeBearer)},
	{domain.ErrInvalidToken, unauthorized(challengeInvalidToken)},
	{domain.ErrInvalidCredentials, problem{Status: http.StatusUnauthorized, Code: "invalid_credentials",
		Detail: "invalid email or password"}},
	// Reuse, revocation and an unknown token answer alike: telling a thief
	// that reuse was detected would tell it the family is burnt.
	{domain.ErrRefreshTokenInvalid, invalidRefresh},
	{domain.ErrRefreshTokenReused, invalidRefresh},
	{domain.ErrRefreshFamilyRevoked, invalidRefresh},
	{domain.ErrRefreshFamilyLapsed, invalidRefresh},
	{domain.ErrForbidden, problem{Status: http.StatusForbidden, Code: "forbidden",
		Detail: "you may not perform this operation"}},
	{domain.ErrUserNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "no user has this id"}},
	{domain.ErrLastAdmin, problem{Status: http.StatusConflict, Code: "last_admin",
		Detail: "the last enabled admin cannot be disabled, demoted or deleted"}},
	{domain.ErrAccountDisabled, problem{Status: http.StatusForbidden, Code: "account_disabled",
		Detail: "this account is disabled"}},
	// The account acted on, not the caller's: a state of that account
	// that the action does not fit, hence 409 rather than login's 403.
	{domain.ErrUserDisabled, problem{Status: http.StatusConflict, Code: "account_disabled",
		Detail: "this user is disabled; enable the account first"}},
	{domain.ErrEmailNotVerified, problem{Status: http.StatusForbidden, Code: "email_not_verified",
		Detail: "verify the account's email first; POST /auth/email-verification sends a new link"}},
	{domain.ErrInvalidLinkToken, problem{Status: http.StatusBadRequest, Code: "invalid_token",
		Detail: "the link is invalid, expired or used already; ask for a new one"}},
	{domain.ErrInvalidEmailCode, problem{Status: http.StatusUnauthorized, Code: "invalid_code",
		Detail: "the code or link is wrong, expired or used already; ask for a new one (POST /auth/email-code)"}},
	{domain.ErrEmailSignInOff, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "sign-in by email is turned off"}},
	{domain.ErrMFACodeRejected, problem{Status: http.StatusUnauthorized, Code: "invalid_mfa_code",
		Detail: "the code is wrong, used already or malformed"}},
	{domain.ErrInvalidMFACode, problem{Status: http.StatusBadRequest, Code: "invalid_mfa_code",
		Detail: "the code is wrong, used already or malformed"}},
	{domain.ErrInvalidMFAToken, problem{Status: http.StatusUnauthorized, Code: "invalid_mfa_token",
		Detail: "the mfaToken is invalid, expired, used or voided by wrong codes; sign in again"}},
	{domain.ErrMFAAlreadyEnabled, problem{Status: http.StatusConflict, Code: "mfa_already_enabled",
		Detail: "a TOTP factor is enabled already; remove it first"}},
	{domain.ErrMFANotEnabled, problem{Status: http.StatusConflict, Code: "mfa_not_enabled",
		Detail: "the account has no such second factor"}},
	{domain.ErrRecentSignInRequired, problem{Status: http.StatusForbidden, Code: "recent_sign_in_required",
		Detail: "sign in again, with a second factor, to change the second factors of this account"}},
	{domain.ErrMalformedPasskeyCredential, problem{Status: http.StatusBadRequest, Code: "validation_failed",
		Detail: "the request has invalid fields",
		Errors: []fieldError{{Field: "credential", Message: "is not a WebAuthn credential response"}}}},
	{domain.ErrInvalidPasskey, problem{Status: http.StatusUnauthorized, Code: "invalid_passkey",
		Detail: "the passkey could not be verified, or the ceremony is unknown, used or expired"}},
	{domain.ErrPasskeyExists, problem{Status: http.StatusConflict, Code: "passkey_exists",
		Detail: "this passkey is registered already"}},
	{domain.ErrSessionNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "this user has no active session with this id"}},
	{domain.ErrPasskeyNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "no passkey of yours has this id"}},
	{domain.ErrOAuthClientNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "no client has this id"}},
	{domain.ErrPublicOAuthClient, problem{Status: http.StatusConflict, Code: "public_client",
		Detail: "a public client has no secret to rotate"}},
	{domain.ErrIdentityProviderNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "no identity provider has this slug"}},
	{domain.ErrIdentityProviderSlugTaken, problem{Status: http.StatusConflict, Code: "slug_taken",
		Detail: "an identity provider has this slug already",
		Errors: []fieldError{{Field: domain.FieldProviderSlug, Message: "already registered"}}}},
	{domain.ErrIdentityNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "this user has no identity at this provider"}},
	{domain.ErrLastSignInMethod, problem{Status: http.StatusConflict, Code: "last_sign_in_method",
		Detail: "the account would be left with no password, passkey or other identity to sign in with; add one first"}},
	{domain.ErrTokenLimit, problem{Status: http.StatusConflict, Code: "token_limit",
		Detail: "the account holds 50 live personal access tokens; revoke one first"}},
	{domain.ErrPersonalTokenNotFound, problem{Status: http.StatusNotFound, Code: "not_found",
		Detail: "no live personal access token of the user has this id"}},
	// RFC 6750 (section 3.1) names the scope a token lacks in its
	// challenge; the problem says it too.
	{domain.ErrInsufficientScope, problem{Status: http.StatusForbidden, Code: "insufficient_scope",
		Detail:  "the personal access token's scopes do not allow this route",
		headers: map[string]string{"WWW-Authenticate": `Bearer error="insufficient_scope"`}}},
	{domain.ErrInteractiveSessionRequired, problem{Status: http.StatusForbidden, Code: "interactive_session_required",
		Detail: "a personal access token never changes a password, email, second factor, passkey, session, token or linked identity; sign in"}},
	{domain.ErrEmailTaken, problem{Status: http.StatusConflict, Code: "email_taken",
		Detail: "email already registered", Errors: []fieldError{{Field: "email", Message: "already registered"}}}},
	{domain.ErrHookFailed, problem{Status: http.StatusBadGateway, Code: "hook_failed",
		Detail: "the claims hook gave an answer the token cannot carry; the sign-in is refused"}},
	{domain.ErrUnavailable, unavailableProblem},
	// The request's deadline passed while the store was slow or away: the
	// client gets a fast, retryable answer instead of a hung connection.
	// (A canceled context means the client left; the answer goes nowhere.)
	{context.DeadlineExceeded, unavailableProblem},
	{context.Canceled, unavailableProblem},
}

var unavailableProblem = problem{Status: http.StatusServiceUnavailable, Code: "unavailable",
	Detail: "the service is temporarily unavailable; retry shortly", headers: map[string]string{"Retry-After": "1"}}

var invalidRefresh = problem{Status: http.StatusUnauthorized, Code: "invalid_refresh_token",
	Detail: "the refresh token is invalid, expired or revoked"}

// problemOf maps err to its answer; ok is false for an error nobody
// expected, which is a 500.
func problemOf(err error) (p problem, ok bool) {
	var (
		reqErr   *requestError
		verr     *domain.ValidationError
		perr     *domain.PageError
		tooMany  *domain.TooManyAttemptsError
		budget   *domain.MailBudgetError
		maxBytes *http.MaxBytesError
		refused  *domain.SignInRefusedError
	)
	switch {
	case errors.As(err, &reqErr):
		return reqErr.p, true
	case errors.As(err, &maxBytes):
		return tooLarge(maxBytes.Limit), true
	case errors.As(err, &verr):
		p = problem{Status: http.StatusBadRequest, Code: "validation_failed", Detail: "the request has invalid fields"}
		for _, f := range verr.Fields {
			p.Errors = append(p.Errors, fieldError{Field: f.Field, Message: f.Message})
		}
		return p, true
	case errors.As(err, &perr):
		return problem{Status: http.StatusBadRequest, Code: "invalid_parameter",
			Detail: "invalid parameter " + perr.Bound + ": " + perr.Reason,
			Errors: []fieldError{{Field: perr.Bound, Message: perr.Reason}}}, true
	case errors.As(err, &tooMany):
		return problem{Status: http.StatusTooManyRequests, Code: "too_many_attempts",
			Detail:  "too many failed logins for this email; retry later",
			headers: map[string]string{"Retry-After": retryAfter(tooMany.RetryAfter)}}, true
	case errors.As(err, &refused):
		// The hook's message, made fit to show (domain.NewSignInRefused).
		return problem{Status: http.StatusForbidden, Code: "sign_in_refused", Detail: refused.Message}, true
	case errors.As(err, &budget):
		return problem{Status: http.StatusTooManyRequests, Code: "mail_budget_spent",
			Detail:  "this account was sent as many messages as it may be for now; retry the change of email later",
			headers: map[string]string{"Retry-After": retryAfter(budget.RetryAfter)}}, true
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.problem, true
		}
	}
	return problem{}, false
}

// retryAfter renders a wait as whole seconds, rounded up and at least 1, so
// that a client that obeys it is never refused again for being early.
func retryAfter(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}

// fail answers err. Unexpected errors are logged with the request id and
// answered with a generic 500: their text may hold internals.
func (h *handler) fail(c *gin.Context, err error) {
	p, ok := problemOf(err)
	switch {
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		h.log.LogAttrs(c.Request.Context(), slog.LevelDebug, "request abandoned by the client",
			slog.String("route", c.FullPath()))
	case ok && p.Status == http.StatusServiceUnavailable:
		// Expected in an outage or under overload, but operators need to see it.
		h.log.LogAttrs(c.Request.Context(), slog.LevelWarn, "request failed: unavailable",
			slog.String("route", c.FullPath()), slog.String("error", err.Error()))
	}
	if !ok {
		h.log.LogAttrs(c.Request.Context(), slog.LevelError, "request failed",
			slog.String("request_id", RequestID(c.Request.Context())),
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("error", err.Error()))
		p = internalProblem()
	}
	h.writeProblem(c, p)
}

// writeProblem sends p and stops the handler chain.
func (h *handler) writeProblem(c *gin.Context, p problem) {
	p.Type = "about:blank"
	p.Title = http.StatusText(p.Status)
	p.Instance = c.Request.URL.Path
	for k, v := range p.headers {
		c.Header(k, v)
	}
	body, err := json.Marshal(p)
	if err != nil {
		// A problem holds strings and ints only; this cannot happen.
		body = []byte(`{"type":"about:blank","status":500,"code":"internal"}`)
	}
	writeBody(c, p.Status, problemContentTypeValue, body)
	c.Abort()
}
