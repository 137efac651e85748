package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
)

// The per-IP limits guard the password hashing: every route that checks
// or hashes a password takes a token of the client's /auth allowance
// (Options.AuthIPLimit, per minute), and self-service registration one
// of its hourly allowance too (Options.RegisterIPLimit). A refused
// request takes nothing from either.

// rateLimited is the answer past a per-IP limit.
func rateLimited(wait string) problem {
	return problem{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Detail:  "too many requests from this address; retry later",
		headers: map[string]string{"Retry-After": wait}}
}

// allowIP takes a token for the request's client from every limiter (or
// none), and answers 429 rate_limited when one refuses. It reports whether
// the request may go on.
func (h *handler) allowIP(c *gin.Context, limiters ...*ratelimit.Limiter) bool {
	ip := ratelimit.ClientIP(c.Request, h.trustedProxies)
	if ok, wait := ratelimit.AllowAll(ip, limiters...); !ok {
		h.writeProblem(c, rateLimited(retryAfter(wait)))
		return false
	}
	return true
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

// allowPasswordUpdate applies the /auth allowance to a PUT that checks or
// hashes a password (password or currentPassword present): a stolen
// access token must not get unlimited guesses at currentPassword from one
// address, beyond the per-email lock-out.
func (h *handler) allowPasswordUpdate(c *gin.Context, req updateUserRequest) bool {
	if req.Password == nil && req.CurrentPassword == nil {
		return true
	}
	return h.allowIP(c, h.authLimiter)
}
