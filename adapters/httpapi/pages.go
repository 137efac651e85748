package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
)

// The path prefixes of the pages, served by Options.Pages (the adapter
// adapters/web, which this one does not import: cmd passes it in): the
// pages of the links userd mails and the account page under /account/,
// the admin console under /admin/. The handler answers every path under
// them, 404 included.
const (
	accountPages = "/account/"
	adminPages   = "/admin/"
)

// The OpenID provider's pages, served by Options.Pages too: the literal
// paths of adapters/web's AuthorizeContinuePath, ConsentPath and
// EndSessionPath (this adapter does not import that one). The provider's
// own endpoints, /oauth2/authorize and the others, are routes of this
// adapter (provider.go).
const (
	// identityProviderFlows are the starts and callbacks of the sign-ins
	// through other identity providers (adapters/web's IdPPrefix).
	identityProviderStart    = "/auth/idp/:slug/start"
	identityProviderCallback = "/auth/idp/:slug/callback"
	authorizeContinuePage    = "/oauth2/authorize/continue"
	consentPage              = "/oauth2/consent"
	endSessionPage           = "/oauth2/end_session"
)

// TooManyRequestsPage is a page handler that can say, in its own words and
// markup, that a per-IP limit refused a request. When Options.Pages has
// this method, a refused page request is answered by it; otherwise with
// the 429 problem of the API.
type TooManyRequestsPage interface {
	ServeTooManyRequests(w http.ResponseWriter, r *http.Request, retryAfter time.Duration)
}

// UnavailablePage is a page handler with its own answer to a request that
// the per-IP limit could not check (its store failed, and the limits fail
// closed); without it, the answer is the 503 problem of the API.
type UnavailablePage interface {
	ServeUnavailable(w http.ResponseWriter, r *http.Request)
}

// LimitedPages is a page handler that says which of its requests check a
// password or a second factor: those fall under the per-IP allowance of
// /auth, as the API's routes that do the same.
type LimitedPages interface {
	LimitedByIP(r *http.Request) bool
}

// RegistrationLimitedPages is a page handler that says which of its
// requests may ask what a registration asks, whether an email is taken
// (the account page's change of email): those take from the hourly
// registration allowance as well as from the /auth one.
type RegistrationLimitedPages interface {
	LimitedAsRegistration(r *http.Request) bool
}

// mountPages routes the pages to pages, behind the middleware of every
// route (request id, access log, timeout). The access log writes the path
// without the query, so the token of a link never reaches the log.
func (h *handler) mountPages(e *gin.Engine, pages http.Handler) {
	serve := gin.WrapH(pages)
	limit := h.limitPageByIP(pages)
	// Only GET and POST: a page is read, or a form is sent; no page
	// answers another method, which the engine refuses as for any route.
	for _, prefix := range []string{accountPages, adminPages} {
		e.GET(prefix+"*path", limit, serve)
		e.POST(prefix+"*path", limit, serve)
	}
	// A provider's flow signs in: under the /auth allowance, as the
	// rest of /auth is.
	e.GET(identityProviderStart, limit, serve)
	e.GET(identityProviderCallback, limit, serve)
	// None of these checks a password or a code: no per-IP limit.
	e.GET(authorizeContinuePage, serve)
	e.POST(consentPage, serve)
	e.GET(endSessionPage, serve)
	e.POST(endSessionPage, serve)
}

// limitPageByIP applies the /auth allowance to the page requests that
// check a password or a code (LimitedPages), and the registration
// allowance too to those that may tell whether an email is taken
// (RegistrationLimitedPages): a refusal is the page's own 429 when it has
// one.
func (h *handler) limitPageByIP(pages http.Handler) gin.HandlerFunc {
	limited, canTell := pages.(LimitedPages)
	asRegistration, canTellRegistration := pages.(RegistrationLimitedPages)
	refuse, hasPage := pages.(TooManyRequestsPage)
	unavailable, hasUnavailable := pages.(UnavailablePage)
	return func(c *gin.Context) {
		if !canTell || !limited.LimitedByIP(c.Request) {
			c.Next()
			return
		}
		limiters := []*ratelimit.Limiter{h.authLimiter}
		if canTellRegistration && asRegistration.LimitedAsRegistration(c.Request) {
			limiters = append(limiters, h.registerLimiter)
		}
		if !hasPage {
			if h.allowIP(c, limiters...) {
				c.Next()
			}
			return
		}
		ip := ratelimit.ClientIP(c.Request, h.trustedProxies)
		ok, wait, storeFailed := h.takeIP(c, ip, limiters...)
		switch {
		case ok:
			c.Next()
			return
		case storeFailed && hasUnavailable:
			unavailable.ServeUnavailable(c.Writer, c.Request)
		case storeFailed:
			h.writeProblem(c, unavailableProblem)
		default:
			refuse.ServeTooManyRequests(c.Writer, c.Request, wait)
		}
		c.Abort()
	}
}
