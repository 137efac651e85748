package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
)

// The per-IP limits guard the password hashing and what may be asked of
// the accounts: every route that checks or hashes a password, or changes
// an email (which mails two addresses), takes a token of the client's
// /auth allowance (Options.AuthIPLimit, per minute), and self-service
// registration one of its hourly allowance too (Options.RegisterIPLimit),
// as does a non-admin's change of email that finds the email taken (the
// same question as a registration's 409). A refused request takes nothing
// from either.

// rateLimited is the answer past a per-IP limit.
func rateLimited(wait string) problem {
	return problem{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Detail:  "too many requests from this address; retry later",
		headers: map[string]string{"Retry-After": wait}}
}

// allowIP takes a token for the request's client from every limiter (or
// none), and answers 429 rate_limited when one refuses, or 503
// unavailable when their store failed and they fail closed. It reports
// whether the request may go on.
func (h *handler) allowIP(c *gin.Context, limiters ...*ratelimit.Limiter) bool {
	ip := ratelimit.ClientIP(c.Request, h.trustedProxies)
	ok, wait, storeFailed := h.takeIP(c, ip, limiters...)
	switch {
	case ok:
		return true
	case storeFailed:
		// Not the client's excess: the limit could not be checked. A
		// 429 would tell it to wait for a budget that may be there.
		h.writeProblem(c, unavailableProblem)
	default:
		h.writeProblem(c, rateLimited(retryAfter(wait)))
	}
	return false
}

// takeIP is ratelimit.Take under the request's context, with the store's
// failure logged and counted; storeFailed reports a refusal for it.
func (h *handler) takeIP(c *gin.Context, ip netip.Addr, limiters ...*ratelimit.Limiter) (ok bool, wait time.Duration, storeFailed bool) {
	ok, wait, err := ratelimit.Take(c.Request.Context(), ip, limiters...)
	if err != nil {
		if h.limitMetrics != nil {
			h.limitMetrics.ObserveRateLimitStoreError(ok)
		}
		if n, due := h.limitStoreLog.due(); due {
			h.log.LogAttrs(c.Request.Context(), slog.LevelError, "rate limit store failed",
				slog.Bool("failed_open", ok), slog.Int("failures", n), slog.String("error", err.Error()))
		}
	}
	return ok, wait, err != nil && !ok
}

// RateLimitLogEvery is the most often a failure of the per-IP limits'
// store is logged: in an outage every limited request fails, and one
// line a request would bury the rest of the log (the metric counts them
// all).
const RateLimitLogEvery = 10 * time.Second

// everyLog lets one line through per period, counting the events it
// held back.
type everyLog struct {
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	last   time.Time
	events int
}

// due counts one event and reports whether it is time for a line, and
// how many events (this one included) the line stands for.
func (e *everyLog) due() (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events++
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < e.every {
		return 0, false
	}
	n := e.events
	e.last, e.events = now, 0
	return n, true
}

// limitAuthByIP refuses a request past its client IP's per-minute allowance
// with 429 rate_limited; refused requests take no allowance.
func (h *handler) limitAuthByIP(c *gin.Context) {
	if h.allowIP(c, h.authLimiter) {
		c.Next()
	}
}

// limitRegistration applies the limits of POST /api/users, after the
// caller is known: every create hashes a password, so it counts against
// the /auth allowance, and one that is not an admin's is a self-service
// registration, which also counts against the hourly registration
// allowance. Without the second, one address could fill the hashing slots
// with registrations and probe which emails exist (409 email_taken) at
// the full /auth rate.
func (h *handler) limitRegistration(c *gin.Context) {
	limiters := []*ratelimit.Limiter{h.authLimiter}
	if !principal(c).IsAdmin() {
		limiters = append(limiters, h.registerLimiter)
	}
	if h.allowIP(c, limiters...) {
		c.Next()
	}
}

// allowCredentialUpdate applies the /auth allowance to a PUT that checks
// or hashes a password (password or currentPassword present) or may
// change the email (email present): a stolen access token must not get
// unlimited guesses at currentPassword from one address, beyond the
// per-email lock-out, nor mail addresses as fast as it can send changes
// of email (the account's mail budget holds each account; this holds the
// address that works many).
func (h *handler) allowCredentialUpdate(c *gin.Context, req updateUserRequest) bool {
	if req.Password == nil && req.CurrentPassword == nil && req.Email == nil {
		return true
	}
	return h.allowIP(c, h.authLimiter)
}

// allowEmailTaken counts a PUT's 409 email_taken against the client's
// hourly registration allowance before it is sent, as POST /api/users
// counts every registration: a change to an email that another account
// has asks the same "is this email registered?". Past the allowance the
// answer is 429 rate_limited, which tells nothing about the email. It is
// counted after the fact, not before every PUT with an email, because
// clients of the original interface send the whole record, email
// included, with every change; a PUT that finds the email free changes it
// and takes from the account's mail budget instead. Admins are exempt,
// as from the registration allowance. It reports whether the 409 may be
// sent (when not, the answer is written).
func (h *handler) allowEmailTaken(c *gin.Context) bool {
	if principal(c).IsAdmin() {
		return true
	}
	return h.allowIP(c, h.registerLimiter)
}
