package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/rs/cors"
)

// What a browser page on a listed origin may send and read (CORS). The
// request headers are those a client of this API sets beyond the
// CORS-safelisted ones (Accept is one of those); the exposed headers are
// those a client needs to read: the request id to report a problem, the
// Location of a created user, the Link of the next page, the Retry-After
// of a 429 or 503.
var (
	corsAllowedHeaders = []string{"Authorization", "Content-Type", "X-Request-Id", "Accept-Language"}
	corsExposedHeaders = []string{"X-Request-Id", "Location", "Link", "Retry-After"}
	// corsActualMethods are those a cross-origin request may carry when
	// its route answers: a route's own, or an error (404, 405) a page
	// should be able to read.
	corsActualMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodHead}
)

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer. Chromium caps it at 7200 and Firefox at 86400; 10 minutes keeps
// a change of USERD_CORS_ALLOWED_ORIGINS quick to take effect.
const corsMaxAge = 600

// RefreshCookieName is the cookie that carries the refresh token when
// Options.RefreshCookie is on. The __Host- prefix makes the browser refuse
// it unless it is Secure, has Path=/ and no Domain: no sibling subdomain
// can set or shadow it.
const RefreshCookieName = "__Host-userd_refresh"

// browser holds what serves browser clients: CORS for the listed origins,
// and, with the refresh cookie, the refusal of cross-origin requests.
type browser struct {
	origins []string
	anyOrig bool
	cookie  bool
	// actual answers the CORS headers of an actual (not preflight)
	// request; preflight holds one *cors.Cors per set of route methods,
	// since the library allows one method list per instance.
	actual    *cors.Cors
	mu        sync.Mutex
	preflight map[string]*cors.Cors
	// guard refuses unsafe requests from other origins when the cookie
	// authenticates; nil without the cookie.
	guard *http.CrossOriginProtection
	// routes are the engine's /api and /auth routes, for the preflights.
	routes []gin.RouteInfo
}

func newBrowser(opts Options) (*browser, error) {
	b := &browser{origins: opts.CORSAllowedOrigins, cookie: opts.RefreshCookie, preflight: map[string]*cors.Cors{}}
	b.anyOrig = slices.Contains(b.origins, "*")
	b.actual = b.corsFor(corsActualMethods)
	if b.cookie {
		b.guard = http.NewCrossOriginProtection()
		for _, o := range b.origins {
			if err := b.guard.AddTrustedOrigin(o); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

func (b *browser) corsFor(methods []string) *cors.Cors {
	return cors.New(cors.Options{
		AllowedOrigins: b.origins,
		AllowedMethods: methods,
		AllowedHeaders: corsAllowedHeaders,
		ExposedHeaders: corsExposedHeaders,
		MaxAge:         corsMaxAge,
		// Credentials only go with the cookie; a "*" never comes with
		// them (config refuses the pair, and so does the library).
		AllowCredentials: b.cookie && !b.anyOrig,
	})
}

// preflightFor returns the CORS handler of a route with these methods.
func (b *browser) preflightFor(methods []string) *cors.Cors {
	key := strings.Join(methods, ",")
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.preflight[key]
	if !ok {
		c = b.corsFor(methods)
		b.preflight[key] = c
	}
	return c
}

// listed reports whether origin may use the API from a browser. Browsers
// write origins in lower case without a default port, as config keeps
// the list.
func (b *browser) listed(origin string) bool {
	return origin != "" && (b.anyOrig || slices.Contains(b.origins, origin))
}

// providerCORSPaths are the OpenID provider's routes a single-page app
// calls from its own origin (docs/oidc.md): the metadata, the keys, the
// token endpoint, userinfo and revocation. Authorization is a
// navigation, and introspection a server's, so neither answers CORS.
var providerCORSPaths = map[string]bool{
	"/.well-known/openid-configuration": true, "/.well-known/oauth-authorization-server": true,
	"/.well-known/jwks.json": true, "/oauth2/token": true, "/oauth2/userinfo": true, "/oauth2/revoke": true,
}

// corsPath reports whether p answers CORS: the API's and the provider's
// paths for browsers.
func corsPath(p string) bool { return isAPIPath(p) || providerCORSPaths[p] }

// cors answers CORS on /api/*, /auth/* and providerCORSPaths for a listed origin, and adds
// nothing for any other: a preflight from an unlisted origin gets the
// answer it got before CORS existed (405, or 404 for an unknown path), and
// the browser refuses the request.
//
// A preflight takes its methods from the routes of its path. The library checks the origin, the method and the headers
// asked for and writes Vary; the answer then lists every method and
// header of the route rather than only those asked for, so that one
// cached preflight serves them all.
func (h *handler) cors(c *gin.Context) {
	r := c.Request
	origin := r.Header.Get("Origin")
	if !corsPath(r.URL.Path) || !h.browser.listed(origin) {
		c.Next()
		return
	}
	w := c.Writer
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.browser.actual.HandlerFunc(w, r)
		c.Next()
		return
	}
	methods := h.routeMethods(c)
	if len(methods) == 0 {
		// An unknown path: its 404.
		c.Next()
		return
	}
	h.browser.preflightFor(methods).HandlerFunc(w, r)
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		w.Header().Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
		w.Header().Set("Access-Control-Allow-Headers", strings.Join(corsAllowedHeaders, ", "))
	}
	c.Abort()
}

// routeMethods are the methods the path of an OPTIONS request answers:
// those of the routes whose pattern matches it. (Gin's own Allow for such
// a request can name a method that only a neighbouring path has: PATCH of
// /api/users/me shows up for /api/users/me/mfa.)
func (h *handler) routeMethods(c *gin.Context) []string {
	path := c.Request.URL.Path
	if path == "/api/users/me" {
		// GET only: the other methods reach meNotAllowed, not /:id.
		return []string{http.MethodGet}
	}
	var out []string
	for _, r := range h.browser.routes {
		if !slices.Contains(out, r.Method) && matchPattern(r.Path, path) {
			out = append(out, r.Method)
		}
	}
	slices.Sort(out)
	return out
}

// matchPattern reports whether path matches a gin route pattern, where
// a :name segment matches any non-empty segment.
func matchPattern(pattern, path string) bool {
	ps, ss := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(ss) {
		return false
	}
	for i, p := range ps {
		if strings.HasPrefix(p, ":") {
			if ss[i] == "" {
				return false
			}
			continue
		}
		if p != ss[i] {
			return false
		}
	}
	return true
}

// crossOrigin refuses, when the refresh cookie is on, an unsafe request to
// /api/* or /auth/* that a browser sends from another origin than userd's
// own or a listed one: the cookie would go with it (a same-site origin,
// such as another port of the same host, is not stopped by SameSite), and
// such a page cannot read the answer anyway. Requests without the
// browser's Sec-Fetch-Site and Origin headers (other programs) pass.
func (h *handler) crossOrigin(c *gin.Context) {
	if h.browser.guard == nil || !isAPIPath(c.Request.URL.Path) {
		c.Next()
		return
	}
	if err := h.browser.guard.Check(c.Request); err != nil {
		h.writeProblem(c, problem{Status: http.StatusForbidden, Code: "cross_origin_request",
			Detail: "a browser request from another origin than those of USERD_CORS_ALLOWED_ORIGINS is refused"})
		return
	}
	c.Next()
}

// setRefreshCookie hands the refresh token to a browser as an HttpOnly
// cookie, which scripts (and so an injected one) cannot read.
func setRefreshCookie(c *gin.Context, token string, maxAge int64) {
	http.SetCookie(c.Writer, &http.Cookie{
		Name: RefreshCookieName, Value: token, Path: "/", MaxAge: int(maxAge),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// clearRefreshCookie tells the browser to drop the cookie (Max-Age=0).
func clearRefreshCookie(c *gin.Context) {
	// http.Cookie writes Max-Age=0 for a negative MaxAge.
	http.SetCookie(c.Writer, &http.Cookie{
		Name: RefreshCookieName, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// refreshCookie returns the refresh token of the request's cookie, "" when
// there is none.
func refreshCookie(r *http.Request) string {
	ck, err := r.Cookie(RefreshCookieName)
	if err != nil {
		return ""
	}
	return ck.Value
}
