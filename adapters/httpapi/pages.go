package httpapi

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
)

// The paths of the pages that people reach from the links userd mails,
// served by Options.Pages (the adapter adapters/web, which this one does
// not import: cmd passes it in). They must be the paths that handler
// serves; the tests that mount the real pages hold the two to each other.
const (
	verifyEmailPage   = "/account/verify-email"
	resetPasswordPage = "/account/reset-password"
	pagesStylesheet   = "/account/assets/style.css"
)

// TooManyRequestsPage is a page handler that can say, in its own words and
// markup, that a per-IP limit refused a request. When Options.Pages has
// this method, a refused page request is answered by it; otherwise with
// the 429 problem of the API.
type TooManyRequestsPage interface {
	ServeTooManyRequests(w http.ResponseWriter, r *http.Request, retryAfter time.Duration)
}

// mountPages routes the pages to pages, behind the middleware of every
// route (request id, access log, timeout). The access log writes the path
// without the query, so the token of a link never reaches the log.
func (h *handler) mountPages(e *gin.Engine, pages http.Handler) {
	serve := gin.WrapH(pages)
	e.GET(verifyEmailPage, serve)
	e.POST(verifyEmailPage, serve)
	e.GET(resetPasswordPage, serve)
	// Setting a password hashes it: the /auth allowance applies, as on
	// every route that checks or hashes one.
	e.POST(resetPasswordPage, h.limitPageByIP(pages), serve)
	e.GET(pagesStylesheet, serve)
}

// limitPageByIP is limitAuthByIP for a page: a refusal is the page's own
// 429 when it has one.
func (h *handler) limitPageByIP(pages http.Handler) gin.HandlerFunc {
	refuse, hasPage := pages.(TooManyRequestsPage)
	return func(c *gin.Context) {
		if !hasPage {
			h.limitAuthByIP(c)
			return
		}
		ip := ratelimit.ClientIP(c.Request, h.trustedProxies)
		if ok, wait := ratelimit.AllowAll(ip, h.authLimiter); !ok {
			refuse.ServeTooManyRequests(c.Writer, c.Request, wait)
			c.Abort()
			return
		}
		c.Next()
	}
}
