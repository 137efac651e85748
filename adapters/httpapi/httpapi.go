// Package httpapi is the driving HTTP adapter of userd: a gin router that
// turns requests into calls on the application services, and their results
// and domain errors into JSON and RFC 9457 problem details, as fixed by the
// HTTP contract.
//
// The package owns every request and response DTO; domain types never see a
// JSON tag, and requests are never bound into them.
package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/adapters/httpapi/ratelimit"
	"github.com/userd/userd/application"
	"github.com/userd/userd/ports"
)

// DefaultMaxBodyBytes is the largest request body accepted (64 KiB); a
// larger one is a 413.
const DefaultMaxBodyBytes int64 = 64 << 10

// Options tune the handler. The zero value is usable.
type Options struct {
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger receives the access log and unexpected errors; nil discards.
	Logger *slog.Logger
	// Clock turns token expiry times into the expiresIn seconds of a token
	// response. It must be the clock the application services use; nil
	// means the system clock.
	Clock ports.Clock
	// AuthIPLimit is how many requests a minute one client IP may send to
	// /auth/* and to the other routes that check or hash a password
	// (POST /api/users; PUT /api/users/{id} with password or
	// currentPassword); 0 turns the limit off.
	AuthIPLimit int
	// RegisterIPLimit is how many accounts one client IP may create an
	// hour without being an admin (POST /api/users); 0 turns the limit
	// off.
	RegisterIPLimit int
	// IPv6Prefix is the prefix length by which the per-IP limits key IPv6
	// clients; 0 means ratelimit.DefaultIPv6Prefix (64), 128 each address.
	IPv6Prefix int
	// RateLimitStore, when set, keeps the per-IP limits' buckets instead
	// of process memory, so that every node sharing it draws on one
	// budget (adapters/redislimit).
	RateLimitStore ports.RateLimitStore
	// RateLimitFailClosed refuses the requests under the per-IP limits
	// with 503 unavailable while RateLimitStore fails; by default they are
	// admitted (fail open). Either way the failure is logged (at most one
	// line every RateLimitLogEvery) and counted in RateLimitMetrics.
	RateLimitFailClosed bool
	// RateLimitMetrics, when set, counts RateLimitStore's failures.
	RateLimitMetrics RateLimitStoreObserver
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// RequestTimeout bounds the work done for one request (database calls
	// included): past it the request answers 503 unavailable instead of
	// hanging on a database that went away. 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxInFlight caps the /api and /auth requests served at once; more
	// wait briefly, then get 503. 0 means DefaultMaxInFlight.
	MaxInFlight int
	// Health answers GET /readyz; nil means always ready.
	Health ports.HealthChecker
	// Metrics, when set, observes every request (its route pattern,
	// method, status and latency).
	Metrics RequestObserver
	// MetricsHandler, when set, is served at GET /metrics; leave it nil
	// when the metrics are served on a separate address.
	MetricsHandler http.Handler
	// MetricsAllow are the client networks (the client IP as the per-IP
	// limits see it, trusted proxies honoured) that may GET /metrics;
	// others get the 404 of an unknown route. Nil means
	// DefaultMetricsAllow.
	MetricsAllow []netip.Prefix
	// KeySet publishes the access-token verification keys at
	// GET /.well-known/jwks.json; nil publishes an empty set.
	KeySet KeySet
	// Pages, when set, serves the pages of the links userd mails: GET and
	// POST /account/verify-email and /account/reset-password, and GET
	// /account/assets/style.css (the handler of adapters/web). They pass
	// through the middleware of every route; the POST of reset-password
	// counts against AuthIPLimit, and is refused by the handler's
	// ServeTooManyRequests when it has one (TooManyRequestsPage). Nil
	// leaves those paths 404.
	Pages http.Handler
	// Provider, when set, serves the OpenID provider: GET
	// /.well-known/openid-configuration and
	// /.well-known/oauth-authorization-server, GET and POST
	// /oauth2/authorize and /oauth2/userinfo, POST /oauth2/token,
	// /oauth2/introspect and /oauth2/revoke (the handler of
	// adapters/oidcprovider). Nil leaves those paths 404
	// (USERD_OIDC_PROVIDER=false).
	Provider http.Handler
	// ProviderRegistration routes the provider's dynamic registration
	// (POST /oauth2/register, USERD_OIDC_DYNAMIC_REGISTRATION) to
	// Provider, within the per-IP allowance of /auth; false leaves it 404.
	ProviderRegistration bool
	// CORSAllowedOrigins are the origins (scheme://host[:port], as a
	// browser writes them) whose pages may call /api/* and /auth/*; "*"
	// alone admits any origin, and cannot go with RefreshCookie (New
	// panics on it, as on an origin that is not one: config refuses
	// both). Other origins get no CORS header.
	CORSAllowedOrigins []string
	// RefreshCookie hands the refresh token to browsers as the HttpOnly
	// cookie RefreshCookieName instead of in the token response's body,
	// reads it on refresh and logout, lets CORS carry credentials for the
	// listed origins, and refuses unsafe requests from other origins (403
	// cross_origin_request).
	RefreshCookie bool
	// TracerProvider, when set, makes a span of every request (the
	// method and route template, the status) and puts the request's
	// context in it, where the database's and the outgoing calls' spans
	// find their parent; nil installs nothing (traces off).
	TracerProvider trace.TracerProvider
	// Propagator reads a caller's traceparent; nil is the W3C trace
	// context with baggage.
	Propagator propagation.TextMapPropagator
}

// KeySet is the source of the public JWK set (RFC 7517) that verifies
// access tokens. The token adapter implements it; the application never
// needs the public keys, so this is the HTTP adapter's own interface.
type KeySet interface {
	// JWKSJSON returns the current JWK set document.
	JWKSJSON() []byte
	// JWKSMaxAge is how long a client may cache the document: the source
	// schedules its key rotations on it (a new key signs only once every
	// copy cached before it was published has expired), so it is the
	// source that says, not this adapter.
	JWKSMaxAge() time.Duration
}

// emptyKeySet publishes no key: a test without token keys. With nothing to
// rotate, nothing needs caching either.
type emptyKeySet struct{}

func (emptyKeySet) JWKSJSON() []byte          { return []byte(`{"keys":[]}`) }
func (emptyKeySet) JWKSMaxAge() time.Duration { return 0 }

// RequestObserver receives one observation per request, where the access
// log is written, so that it sees the status the client got. route is the
// matched route pattern (gin's FullPath, never the raw path), "" when no
// route matched.
type RequestObserver interface {
	ObserveRequest(route, method string, status int, elapsed time.Duration)
}

// RateLimitStoreObserver counts the failures of the per-IP limits' store,
// and whether each request was admitted meanwhile (failedOpen) or
// refused.
type RateLimitStoreObserver interface {
	ObserveRateLimitStoreError(failedOpen bool)
}

// DefaultRequestTimeout is the default of Options.RequestTimeout.
const DefaultRequestTimeout = 10 * time.Second

// handler carries what every route needs.
type handler struct {
	mail *application.MailService
	// emailSignIn signs people in by a code or link sent by mail.
	emailSignIn *application.EmailSignInService
	users       *application.UserService
	auth        *application.AuthService
	mfa         *application.MFAService
	passkeys    *application.PasskeyService
	sessions    *application.SessionService
	tokens      *application.PersonalTokenService
	audit       *application.AuditService
	clients     *application.OAuthClientService
	health      ports.HealthChecker
	clock       ports.Clock
	log         *slog.Logger
	maxBody     int64

	// providers and federation are the identity providers people sign
	// in with, and the identities linked to accounts.
	providers  *application.IdentityProviderService
	federation *application.FederationService

	authLimiter     *ratelimit.Limiter
	registerLimiter *ratelimit.Limiter
	limitStoreLog   *everyLog
	limitMetrics    RateLimitStoreObserver
	trustedProxies  []netip.Prefix
	metricsAllow    []netip.Prefix
	requestTimeout  time.Duration
	admission       *admission

	metrics RequestObserver
	keySet  KeySet
	browser *browser
	// tracer makes each request's span; nil when traces are off.
	tracer *tracer
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }

var releaseMode sync.Once

// New returns the HTTP handler of userd over the application services.
func New(svc *application.Services, opts Options) http.Handler {
	return newEngine(svc, opts)
}

// newEngine builds the router: the handler of the options, the chain of
// middleware every request goes through, and the routes, by area
// (routes.go).
func newEngine(svc *application.Services, opts Options) *gin.Engine {
	// Gin's mode is process-wide; release mode silences its route dump and
	// debug warnings, which would otherwise go to stdout past our logger.
	releaseMode.Do(func() { gin.SetMode(gin.ReleaseMode) })

	h := newHandler(svc, opts)
	e := gin.New()
	// A 301 to another path surprises API clients (and drops the body of a
	// POST in many of them): an unknown path is a plain 404.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	// ClientIP is the TCP peer until trusted proxies are configured; the
	// per-IP limit of /auth/* will rely on that.
	e.ForwardedByClientIP = false
	_ = e.SetTrustedProxies(nil)

	// The chain, outermost first. Every response, 404 and 405 included, gets
	// the request id and nosniff; the access log sees the final status, a
	// recovered panic's 500 too, and so do the request metrics, observed
	// where the access line is written. Per-route checks follow in groups:
	// header checks, then (for /auth/*) the per-IP rate limit, then
	// authentication. CORS comes before everything that may refuse a
	// request, so that a listed origin's page can read every refusal; a
	// preflight ends there (browser.go). The request's span, when traces
	// are on, is begun by requestID, the outermost.
	e.Use(h.requestID, h.accessLog, h.recoverPanic, h.cors, h.crossOrigin, h.bufferBody, h.admit, h.deadline)
	e.NoRoute(h.noRoute)
	e.NoMethod(h.noMethod)

	h.routeOperations(e, opts.MetricsHandler)
	h.routeAPI(e)
	h.routeAuth(e)
	if opts.Pages != nil {
		h.mountPages(e, opts.Pages)
	}
	if opts.Provider != nil {
		h.mountProvider(e, opts.Provider, opts.ProviderRegistration)
	}
	// CORS answers a preflight with the methods of the route it asks about.
	for _, r := range e.Routes() {
		if corsPath(r.Path) {
			h.browser.routes = append(h.browser.routes, r)
		}
	}
	return e
}

// newHandler makes the handler of the options, their defaults filled in.
// It panics on options that config refuses (an origin that is not one).
func newHandler(svc *application.Services, opts Options) *handler {
	h := &handler{mail: svc.Mail, emailSignIn: svc.EmailSignIn, users: svc.Users, auth: svc.Auth, audit: svc.Audit, health: opts.Health,
		mfa: svc.MFA, passkeys: svc.Passkeys, sessions: svc.Sessions, tokens: svc.Tokens, clients: svc.OAuthClients,
		providers: svc.IdentityProviders, federation: svc.Federation,
		clock: opts.Clock, log: opts.Logger, maxBody: opts.MaxBodyBytes, tracer: newTracer(opts)}
	if h.clock == nil {
		h.clock = systemClock{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	h.authLimiter = ratelimit.New(ratelimit.Config{Limit: opts.AuthIPLimit, Period: time.Minute,
		IPv6Prefix: opts.IPv6Prefix, Now: h.clock.Now,
		Store: opts.RateLimitStore, Name: "auth", FailClosed: opts.RateLimitFailClosed})
	h.registerLimiter = ratelimit.New(ratelimit.Config{Limit: opts.RegisterIPLimit, Period: time.Hour,
		IPv6Prefix: opts.IPv6Prefix, Now: h.clock.Now,
		Store: opts.RateLimitStore, Name: "register", FailClosed: opts.RateLimitFailClosed})
	h.limitStoreLog = &everyLog{every: RateLimitLogEvery, now: time.Now}
	h.limitMetrics = opts.RateLimitMetrics
	h.trustedProxies = opts.TrustedProxies
	h.metricsAllow = opts.MetricsAllow
	if h.metricsAllow == nil {
		h.metricsAllow = DefaultMetricsAllow()
	}
	h.requestTimeout = opts.RequestTimeout
	if h.requestTimeout <= 0 {
		h.requestTimeout = DefaultRequestTimeout
	}
	h.admission = newAdmission(opts.MaxInFlight)
	h.metrics, h.keySet = opts.Metrics, opts.KeySet
	if h.keySet == nil {
		h.keySet = emptyKeySet{}
	}
	b, err := newBrowser(opts)
	if err != nil {
		panic("httpapi: Options.CORSAllowedOrigins: " + err.Error())
	}
	h.browser = b
	return h
}
