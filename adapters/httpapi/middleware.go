package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
	"github.com/userd/userd/domain"
)

// RequestID returns the request id that the handler put into the request's
// context, or "" outside a request. A slog handler can use it to tag the
// application's log lines with the id of the request they belong to.
func RequestID(ctx context.Context) string {
	return domain.RequestMetaFrom(ctx).RequestID
}

// maxRequestIDLen bounds a caller's X-Request-Id: it lands in our logs and
// in every audit row, so it must be short and harmless there. 64 holds a
// UUID, a W3C trace id (32 hex) with a span id, or our own 32 hex digits.
const maxRequestIDLen = 64

// saneRequestID accepts 1 to 64 characters of [A-Za-z0-9._-].
func saneRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [16]byte
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The header values of requestID, shared by every answer.
var (
	nosniffValue = []string{"nosniff"}
	noStoreValue = []string{"no-store"}
)

// requestID tags the request with an id (the caller's when sane, so that a
// trace spans a proxy and us) and sets the headers every response carries.
// The id and the client's IP go into the context as domain.RequestMeta,
// where the application's audit trail reads them.
func (h *handler) requestID(c *gin.Context) {
	ctx := c.Request.Context()
	if h.tracer != nil {
		// Begun here, first, so that the access log, the request id's and
		// every later line of the request are written within the span and
		// carry its trace id (LogHandler); and in the one new context the
		// request gets below (each WithContext copies the request).
		var span trace.Span
		var st *spanStart
		ctx, span, st = h.tracer.begin(ctx, c)
		defer h.tracer.end(c, span, st)
	}
	id := c.GetHeader("X-Request-Id")
	if !saneRequestID(id) {
		id = newRequestID()
	}
	// Assigned rather than Set: the keys are canonical already, and the
	// constant values are shared slices, which net/http and gin replace
	// but never write into: fewer allocations on every request
	// (docs/performance.md, "Profiles and the authenticated read").
	hdr := c.Writer.Header()
	hdr["X-Request-Id"] = []string{id}
	hdr["X-Content-Type-Options"] = nosniffValue
	if p := c.Request.URL.Path; isAPIPath(p) || strings.HasPrefix(p, providerPrefix) {
		// Set here, not in the route groups, so that 404 and 405 answers
		// under these prefixes are not cacheable either: they all may carry
		// personal data or tokens (the OpenID provider's every answer, RFC
		// 6749 §5.1).
		hdr["Cache-Control"] = noStoreValue
	}
	meta := domain.RequestMeta{RequestID: id}
	if ip := ratelimit.ClientIP(c.Request, h.trustedProxies); ip.IsValid() {
		meta.ClientIP = ip.String()
	}
	meta.Lang = acceptLanguage(c.Request)
	// Kept as a session shows it; only a sign-in reads it.
	meta.UserAgent = domain.SessionUserAgent(c.Request.UserAgent())
	// The request's scope, with its meta and its deadline (unstarted:
	// deadline starts it), so that the request is copied once.
	scope := newRequestScope(ctx)
	scope.meta = meta
	c.Request = c.Request.WithContext(scope)
	c.Next()
}

// accessLog writes one line per request. It logs no body, no header value
// but the request id, and no query string (?email= is personal data): only
// what cannot carry a secret.
func (h *handler) accessLog(c *gin.Context) {
	start := time.Now()
	// Deferred, so that a panic re-raised by recoverPanic is logged too.
	defer func() {
		status, latency := c.Writer.Status(), time.Since(start)
		if h.metrics != nil {
			h.metrics.ObserveRequest(c.FullPath(), c.Request.Method, status, latency)
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		// Asked first: the attributes escape to the heap, about 550 bytes
		// a request, which a server logging at warn would throw away.
		if !h.log.Enabled(c.Request.Context(), level) {
			return
		}
		attrs := []slog.Attr{
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Duration("latency", latency),
			slog.Int("bytes", max(c.Writer.Size(), 0)),
			slog.String("request_id", RequestID(c.Request.Context())),
		}
		if uid := scopeOf(c).loggedUserID(); uid != "" {
			attrs = append(attrs, slog.String("user_id", uid.String()))
		}
		h.log.LogAttrs(c.Request.Context(), level, "http request", attrs...)
	}()
	c.Next()
}

// recoverPanic turns a panic in a handler into a 500 problem, so that one
// bad request neither kills the process nor gets an empty answer.
func (h *handler) recoverPanic(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if rec == http.ErrAbortHandler {
			// net/http's way to abort a response on purpose; let it through.
			panic(rec)
		}
		h.log.LogAttrs(c.Request.Context(), slog.LevelError, "panic serving request",
			slog.String("request_id", RequestID(c.Request.Context())),
			slog.String("panic", fmt.Sprint(rec)),
			slog.String("stack", string(debug.Stack())))
		if c.Writer.Written() {
			// Too late for a problem body; the client sees a cut response.
			c.Abort()
			return
		}
		h.writeProblem(c, internalProblem())
	}()
	c.Next()
}

// apiHeaders enforces the header rules of the contract on /api/* and /auth/*
// routes: an Accept that excludes JSON is a 406, a POST, PUT or PATCH body
// that is not JSON a 415, a declared length over the limit a 413. It also
// caps the body for the JSON decoder. (Cache-Control: no-store is set by
// requestID.)
func (h *handler) apiHeaders(c *gin.Context) {
	if !acceptsJSON(c.Request.Header.Values("Accept")) {
		h.writeProblem(c, problem{Status: http.StatusNotAcceptable, Code: "not_acceptable",
			Detail: "this resource is only available as application/json"})
		return
	}
	if m := c.Request.Method; m == http.MethodPost || m == http.MethodPut || m == http.MethodPatch {
		route := c.FullPath()
		mayOmitBody := (optionalBody[route] || h.browser.cookie && cookieBody[route]) && bodyless(c.Request)
		if !isJSONContentType(c.GetHeader("Content-Type")) && !mayOmitBody {
			h.writeProblem(c, problem{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Detail: "the request body must be application/json"})
			return
		}
	}
	if c.Request.ContentLength > h.maxBody {
		h.writeProblem(c, tooLarge(h.maxBody))
		return
	}
	// No limit on nothing: net/http gives a request without a body
	// http.NoBody; nor on a body bufferBody read whole within it.
	if b := c.Request.Body; b != nil && b != http.NoBody && !bufferedWithin(b, h.maxBody) {
		c.Request.Body = http.MaxBytesReader(c.Writer, b, h.maxBody)
	}
	c.Next()
}

// optionalBody are the POST routes whose body may be left out (the
// contract's "—"): an empty body needs no Content-Type there.
var optionalBody = map[string]bool{
	"/api/users/me/passkeys/registration": true,
	"/api/users/me/mfa/recovery-codes":    true,
	"/api/users/:id/password-reset":       true,
	"/api/users/:id/unlock":               true,
	"/api/oauth-clients/:id/secret":       true,
	"/auth/passkey":                       true,
}

// cookieBody are the routes whose body may be left out when the refresh
// cookie is on: the cookie holds their refresh token.
var cookieBody = map[string]bool{
	"/auth/refreshtoken":  true,
	"/auth/refresh-token": true,
	"/auth/logout":        true,
}

// bodyless reports whether r says it has no body.
func bodyless(r *http.Request) bool {
	return r.ContentLength == 0 && len(r.TransferEncoding) == 0
}

// validQuery refuses, with 400 invalid_query, a query string that Go's
// parser refuses (a ";" between parameters, a bad percent escape). Gin
// would read such a query as if the broken parts were not there:
// ?limit=1;DROP as no limit at all, silently answering something other
// than what was asked.
func (h *handler) validQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		h.writeProblem(c, problem{Status: http.StatusBadRequest, Code: "invalid_query",
			Detail: "the query string cannot be parsed: separate parameters with & and percent-encode reserved characters such as ;"})
		return
	}
	c.Next()
}

// acceptsJSON reports whether the Accept header values admit JSON. No
// header, or an empty one, admits anything (RFC 9110, 12.5.1); a range
// with q=0 is a refusal, not an acceptance.
func acceptsJSON(values []string) bool {
	seen := false
	for _, v := range values {
		for _, r := range strings.Split(v, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				continue
			}
			seen = true
			typ, params, _ := strings.Cut(r, ";")
			typ = strings.ToLower(strings.TrimSpace(typ))
			switch typ {
			case "*/*", "application/*", "application/json", "application/problem+json":
			default:
				continue
			}
			if qualityOf(params) > 0 {
				return true
			}
		}
	}
	return !seen
}

// qualityOf returns the q parameter of a media range's parameters, 1 when
// absent or unreadable (be liberal in what you accept).
func qualityOf(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 1
		}
		return q
	}
	return 1
}

// isJSONContentType accepts application/json with any parameters (a
// charset, typically) and any structured-syntax application/*+json type,
// in any letter case.
func isJSONContentType(v string) bool {
	if v == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	// ParseMediaType lower-cases the type.
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// Challenges for WWW-Authenticate (RFC 6750, section 3). The error
// attribute is added only when the client sent something we could read as
// an attempt, so that a client without credentials is simply asked for them.
const (
	challengeBearer       = "Bearer"
	challengeInvalidToken = `Bearer error="invalid_token"` //nolint:gosec // G101: a WWW-Authenticate challenge naming an error code, not a credential
	challengeBadRequest   = `Bearer error="invalid_request"`
)

// authenticate reads the bearer token and stores the caller's principal.
// With required, a request without a token is a 401; without it, such a
// request goes on as anonymous. A token that does not verify is a 401
// either way: a client that tried to sign in and failed must learn it,
// not be served as anonymous. A personal access token's caller is then
// held to its scopes (tokenScope): every /api route authenticates here,
// so the check is in this one place.
func (h *handler) authenticate(required bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		values := c.Request.Header.Values("Authorization")
		if len(values) == 0 {
			if required {
				h.writeProblem(c, unauthorized(challengeBearer))
				return
			}
			c.Next()
			return
		}
		token, challenge := bearerToken(values)
		if challenge != "" {
			h.writeProblem(c, unauthorized(challenge))
			return
		}
		p, err := h.auth.Authenticate(c.Request.Context(), token)
		if err != nil {
			if errors.Is(err, domain.ErrInvalidToken) {
				h.writeProblem(c, unauthorized(challengeInvalidToken))
				return
			}
			h.fail(c, err)
			return
		}
		scopeOf(c).principal = p // deadline, before, made sure of a scope
		if err := tokenScope(c, p); err != nil {
			h.fail(c, err)
			return
		}
		c.Next()
	}
}

// bearerToken reads the Authorization header values of a request: the
// token of a single "Bearer <token>" (the scheme in any letter case), or
// else the challenge to answer with. No value, or another scheme (Basic,
// …), asks for a bearer token; two values are a bad request; a token
// outside the b64token syntax of RFC 6750 (section 2.1) cannot be one we
// issued and is refused as invalid without being parsed.
func bearerToken(values []string) (token, challenge string) {
	switch {
	case len(values) == 0:
		return "", challengeBearer
	case len(values) > 1:
		return "", challengeBadRequest
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", challengeBearer
	}
	token = strings.TrimSpace(token)
	switch {
	case token == "":
		return "", challengeBadRequest
	case !isB64Token(token):
		return "", challengeInvalidToken
	}
	return token, ""
}

// isB64Token reports whether s is an RFC 6750 b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !b64TokenChar[body[i]] {
			return false
		}
	}
	return true
}

// b64TokenChar marks the bytes of a b64token before its "=": a table, as
// every byte of every bearer token goes through it.
var b64TokenChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", byte(c)) >= 0
	}
	return t
}()

// principal returns the caller, nil when anonymous.
func principal(c *gin.Context) *domain.Principal {
	if s := scopeOf(c); s != nil {
		return s.principal
	}
	return nil
}

// deadline gives the request's context the configured timeout, so that
// every database call made for it gives up in time.
func (h *handler) deadline(c *gin.Context) {
	s := scopeOf(c)
	if s == nil || s.started.Load() { // a chain without requestID's scope
		ctx := c.Request.Context()
		s = newRequestScope(ctx)
		s.meta = domain.RequestMetaFrom(ctx)
		c.Request = c.Request.WithContext(s)
	}
	s.start(time.Now().Add(h.requestTimeout))
	defer s.release()
	c.Next()
}

// maxAcceptLanguage bounds the Accept-Language kept for the messages a
// request causes: long enough for any real preference list.
const maxAcceptLanguage = 256

// acceptLanguage is the request's Accept-Language, cut to a sane length
// and to printable ASCII (the mail adapter parses it).
func acceptLanguage(r *http.Request) string {
	v := r.Header.Get("Accept-Language")
	if len(v) > maxAcceptLanguage {
		v = v[:maxAcceptLanguage]
	}
	for i := 0; i < len(v); i++ {
		if v[i] < ' ' || v[i] > '~' {
			return ""
		}
	}
	return v
}
