package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
)

// testOrigin is the origin of the tests' passkey ceremonies, on the RP id
// localhost.
const testOrigin = kit.Origin

// Credentials used across the tests. None is on the common-password list.
const (
	adminEmail    = "root@example.com"
	adminPassword = "admin-Passphrase-42"
	custPassword  = "customer-Passphrase-7"
)

type serverConfig struct {
	app       application.Config
	health    ports.HealthChecker
	wrapUsers func(ports.UserRepository) ports.UserRepository
	// wrapTokens puts a test's store in front of the personal access
	// tokens' (withPersonalTokenStore).
	wrapTokens func(ports.PersonalTokenStore) ports.PersonalTokenStore
	timeout    time.Duration
	inFlight   int
	maxBody    int64
	ipLimit    int
	regLimit   int
	v6prefix   int
	proxies    []netip.Prefix
	origins    []string // CORS
	cookie     bool     // the refresh cookie
	// limitStore keeps the per-IP limits' buckets (withRateLimitStore).
	limitStore   ports.RateLimitStore
	failClosed   bool
	limitMetrics httpapi.RateLimitStoreObserver
	// observe wires the audit trail and the metrics (withAudit,
	// withMetrics in audit_test.go); nil leaves them out.
	observe *observation
	// provider turns the OpenID provider's keys on (withOIDCProvider).
	provider bool
	// endpoints, when set, mounts the OpenID provider's endpoints over
	// it (withProviderEndpoints in provider_test.go).
	endpoints oidcprovider.Provider
	// registration opens dynamic registration (withDynamicRegistration).
	registration bool
	// webhooks receives the webhook events (withWebhooks).
	webhooks ports.WebhookSender
	// hook is the claims hook (withClaimsHook).
	hook ports.ClaimsHook
	// tracer spans each request (withTracerProvider).
	tracer trace.TracerProvider
}

type serverOption func(*serverConfig)

func withClosedRegistration() serverOption {
	return func(c *serverConfig) { c.app.OpenRegistration = false }
}

func withRequireCurrentPassword() serverOption {
	return func(c *serverConfig) { c.app.RequireCurrentPassword = true }
}

func withGrace(d time.Duration) serverOption {
	return func(c *serverConfig) { c.app.RefreshReuseGrace = d }
}

func withHealth(h ports.HealthChecker) serverOption { return func(c *serverConfig) { c.health = h } }

func withRequestTimeout(d time.Duration) serverOption { return func(c *serverConfig) { c.timeout = d } }

func withMaxInFlight(n int) serverOption { return func(c *serverConfig) { c.inFlight = n } }

// withUserRepo lets a test put a faulty repository in front of the real one.
func withUserRepo(wrap func(ports.UserRepository) ports.UserRepository) serverOption {
	return func(c *serverConfig) { c.wrapUsers = wrap }
}

// withoutAccountCache turns the account cache off, for a test whose
// faulty store must see every signed-in request's read.
func withoutAccountCache() serverOption {
	return func(c *serverConfig) { c.app.AccountCacheSize = -1 }
}

func withMaxBody(n int64) serverOption { return func(c *serverConfig) { c.maxBody = n } }

// withAuthIPLimit sets the per-IP limit of /auth/* and the trusted proxies.
func withAuthIPLimit(n int, proxies ...string) serverOption {
	return func(c *serverConfig) {
		c.ipLimit = n
		for _, p := range proxies {
			c.proxies = append(c.proxies, netip.MustParsePrefix(p))
		}
	}
}

// withRegisterIPLimit sets the hourly per-IP limit of self-service
// registrations.
func withRegisterIPLimit(n int) serverOption { return func(c *serverConfig) { c.regLimit = n } }

// withCORS lists the origins that may call the API from a browser.
func withCORS(origins ...string) serverOption {
	return func(c *serverConfig) { c.origins = origins }
}

// withOIDCProvider turns the OpenID provider's RS256 keys on.
func withOIDCProvider() serverOption { return func(c *serverConfig) { c.provider = true } }

// withRefreshCookie turns the refresh cookie on.
func withRefreshCookie() serverOption { return func(c *serverConfig) { c.cookie = true } }

// withIPv6Prefix sets the prefix length that keys IPv6 clients.
func withIPv6Prefix(bits int) serverOption { return func(c *serverConfig) { c.v6prefix = bits } }

// testServer is the real handler over the real application services and
// the in-memory adapters, with a clock the test controls.
type testServer struct {
	t       *testing.T
	handler http.Handler
	clock   *clock.Manual
	users   *application.UserService
	auth    *application.AuthService
	// delivery sends what the outbox holds to mailer, when a test runs it.
	delivery *application.DeliveryService
	mailer   *memory.Mailer
	issuer   *jwtissuer.Issuer
	logs     *logbuf.Buffer
	// store is the memory store behind the services, for tests that set
	// up or inspect records directly.
	store *memory.Store
	// observe holds the audit log and metrics registry, when wired.
	observe *observation
	// svc are the services behind the handler.
	svc *application.Services
	// upstream stands for the identity providers.
	upstream *kit.Upstream
	// box seals the store's secrets.
	box ports.SecretBox
}

func newTestServer(t *testing.T, opts ...serverOption) *testServer {
	t.Helper()
	cfg := serverConfig{app: kit.Config()}
	for _, o := range opts {
		o(&cfg)
	}
	logs := &logbuf.Buffer{}
	log := slog.New(httpapi.LogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	app := kit.NewApp(t, kit.AppParts{OIDCProvider: cfg.provider})
	app.Deps.Log, app.Config = log, cfg.app
	app.Config.OIDCDynamicRegistration = cfg.registration
	if cfg.wrapUsers != nil {
		app.Deps.Stores.Users = cfg.wrapUsers(app.Deps.Stores.Users)
	}
	if cfg.wrapTokens != nil {
		app.Deps.Stores.PersonalTokens = cfg.wrapTokens(app.Deps.Stores.PersonalTokens)
	}
	cfg.observe.wire(&app.Deps)
	if cfg.webhooks != nil {
		app.Deps.Webhooks = cfg.webhooks
	}
	app.Deps.ClaimsHook = cfg.hook
	svc := app.Services(t)
	clock, store, box, issuer, mailer := app.Clock, app.Store, app.Box, app.Issuer, app.Mailer
	health := cfg.health
	if health == nil {
		health = store
	}
	hopts := httpapi.Options{
		Logger: log, Clock: clock, MaxBodyBytes: cfg.maxBody, AuthIPLimit: cfg.ipLimit, RegisterIPLimit: cfg.regLimit,
		IPv6Prefix: cfg.v6prefix, TrustedProxies: cfg.proxies, RequestTimeout: cfg.timeout,
		MaxInFlight: cfg.inFlight, KeySet: issuer, Health: health,
		Pages:              web.New(svc, web.Options{Logger: log, Box: box, Clock: clock, AdminConsole: true}),
		CORSAllowedOrigins: cfg.origins, RefreshCookie: cfg.cookie,
		RateLimitStore: cfg.limitStore, RateLimitFailClosed: cfg.failClosed, RateLimitMetrics: cfg.limitMetrics,
	}
	if cfg.endpoints != nil {
		// As cmd does: the pages show the provider's error page when they
		// can, and the adapter its plain one otherwise.
		errorPage, _ := hopts.Pages.(oidcprovider.ErrorPage)
		popts := oidcprovider.Options{Issuer: providerIssuer,
			ContinuePath: "/oauth2/authorize/continue", ErrorPage: errorPage, Logger: log}
		if cfg.registration {
			popts.Registrar, hopts.ProviderRegistration = svc.OAuthClients, true
		}
		hopts.Provider = oidcprovider.New(cfg.endpoints, popts)
	}
	cfg.observe.apply(&hopts)
	hopts.TracerProvider = cfg.tracer
	h := httpapi.New(svc, hopts)
	return &testServer{
		t: t, handler: h, clock: clock, users: svc.Users, auth: svc.Auth, delivery: svc.Delivery, mailer: mailer,
		issuer: issuer, logs: logs, store: store, observe: cfg.observe, svc: svc, upstream: app.Upstream, box: box,
	}
}

// request options.
type reqOption func(*http.Request)

// withToken sends an access token.
func withToken(tok string) reqOption {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func withHeader(k, v string) reqOption { return func(r *http.Request) { r.Header.Set(k, v) } }

func withoutHeader(k string) reqOption { return func(r *http.Request) { r.Header.Del(k) } }

// response is a recorded answer.
type response kit.Reply

// do sends a request. body is sent as is when it is a string or []byte,
// JSON-encoded otherwise, and nil sends none; a body gets Content-Type
// application/json unless an option changes it. Every response is checked
// for the headers the contract puts on all of them.
func (s *testServer) do(method, path string, body any, opts ...reqOption) response {
	s.t.Helper()
	var rd io.Reader
	var sent []byte // the body, for the OpenAPI check; nil when unknown
	switch b := body.(type) {
	case nil:
	case string:
		rd, sent = strings.NewReader(b), []byte(b)
	case []byte:
		rd, sent = bytes.NewReader(b), b
	case io.Reader:
		rd = b
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd, sent = bytes.NewReader(enc), enc
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for _, o := range opts {
		o(req)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		s.t.Errorf("%s %s: X-Content-Type-Options = %q, want nosniff", method, path, got)
	}
	if res.Header.Get("X-Request-Id") == "" {
		s.t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	// Every answer must be one the OpenAPI document describes.
	checkOpenAPI(s.t, req, sent, res)
	return res
}

// problemBody is a problem details response.
type problemBody = kit.Problem

// wantProblem checks that res is a problem with the status and code, with
// every member of RFC 9457 that we promise, and returns it.
func wantProblem(t *testing.T, res response, status int, code string) problemBody {
	t.Helper()
	return kit.WantProblem(t, kit.Reply(res), status, code)
}

// wantJSON checks status and Content-Type and decodes the body into v,
// which must name every member.
func wantJSON(t *testing.T, res response, status int, v any) {
	t.Helper()
	kit.WantJSON(t, kit.Reply(res), status, v)
}

func mediaType(h http.Header) string { return kit.MediaType(h) }

// userBody is the user representation; decoding with
// DisallowUnknownFields proves nothing else (a hash) is in it.
type userBody struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Email    string   `json:"email"`
	Profiles []string `json:"profiles"`
	// EmailVerified, MFAEnabled and Disabled are the account's status.
	EmailVerified bool `json:"emailVerified"`
	MFAEnabled    bool `json:"mfaEnabled"`
	Disabled      bool `json:"disabled"`
	// Metadata and AppMetadata are the JSON objects as sent.
	Metadata    json.RawMessage `json:"metadata"`
	AppMetadata json.RawMessage `json:"appMetadata"`
	CreatedAt   string          `json:"createdAt"`
	UpdatedAt   string          `json:"updatedAt"`
}

type tokenBody struct {
	AccessToken      string   `json:"accessToken"`
	TokenType        string   `json:"tokenType"`
	ExpiresIn        int      `json:"expiresIn"`
	RefreshToken     string   `json:"refreshToken"`
	RefreshExpiresIn int      `json:"refreshExpiresIn"`
	User             userBody `json:"user"`
}

// createAdmin makes the bootstrap admin directly through the use case, as
// the server's start does.
func (s *testServer) createAdmin() domain.User {
	s.t.Helper()
	u, _, err := s.users.EnsureAdmin(context.Background(), "Root", adminEmail, adminPassword)
	if err != nil {
		s.t.Fatal(err)
	}
	return u
}

// adminToken creates the admin and returns an access token for it.
func (s *testServer) adminToken() string {
	s.t.Helper()
	s.createAdmin()
	return s.login(adminEmail, adminPassword).AccessToken
}

func (s *testServer) login(email, password string) tokenBody {
	s.t.Helper()
	var tb tokenBody
	wantJSON(s.t, s.do("POST", "/auth/login", map[string]string{"email": email, "password": password}), http.StatusOK, &tb)
	return tb
}

// register creates a customer through the open registration.
func (s *testServer) register(name, email string) userBody {
	s.t.Helper()
	var u userBody
	res := s.do("POST", "/api/users", map[string]any{"name": name, "email": email, "password": custPassword})
	wantJSON(s.t, res, http.StatusCreated, &u)
	return u
}

// customer registers a customer and signs it in.
func (s *testServer) customer(name, email string) (userBody, tokenBody) {
	s.t.Helper()
	u := s.register(name, email)
	return u, s.login(email, custPassword)
}

// missingID is a well-formed id that no user has.
const missingID = "000000000000000000000000"
