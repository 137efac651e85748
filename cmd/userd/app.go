package main

// The application and the adapters it drives directly (hashing, tokens,
// keys), and the HTTP handler over it.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/federation"
	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/adapters/tracing"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// appModule provides the security adapters and the use cases. Nothing here
// touches the store when built; the token keys load at start
// (startTokens), which only `serve` runs: the one-shot commands sign no
// token, and `userd keys list` must not create a key by looking.
var appModule = fx.Module("application",
	fx.Provide(
		fx.Annotate(func() clock.System { return clock.System{} }, fx.As(new(ports.Clock))),
		fx.Annotate(newPasswordHasher, fx.As(new(ports.PasswordHasher))),
		fx.Annotate(newTokenIssuer, fx.As(fx.Self()), fx.As(new(ports.TokenIssuer))),
		fx.Annotate(jwtissuer.NewRefreshCodec, fx.As(fx.Self()), fx.As(new(ports.RefreshTokenCodec))),
		fx.Annotate(newKeyManager, fx.As(new(ports.AccessTokenKeys))),
		// The OpenID provider's view of the issuer's keys, for the
		// provider's adapter (through an interface it declares).
		(*jwtissuer.Issuer).ProviderKeys,
		newOAuthTokens,
		newUpstream,
		newServices,
	),
)

// newUpstream speaks to the identity providers people sign in with.
func newUpstream(log *slog.Logger, clk ports.Clock, wrap outgoingTransport) ports.IdentityProviderClient {
	return federation.New(federation.Options{Logger: log, Clock: clk, WrapTransport: wrap})
}

// newOAuthTokens gives the OpenID provider its tokens over the issuer's
// keys, or nothing (which turns the provider off) when USERD_OIDC_PROVIDER
// is false.
func newOAuthTokens(cfg config.Config, iss *jwtissuer.Issuer) ports.OAuthTokens {
	if !cfg.OIDCProvider {
		return nil
	}
	return jwtissuer.NewProviderTokens(iss, cfg.ProviderIssuer())
}

func newPasswordHasher(cfg config.Config) *passwordhash.Hasher {
	p := passwordhash.DefaultParams()
	p.Memory, p.Iterations, p.Parallelism = cfg.Argon2MemoryKiB, cfg.Argon2Iterations, cfg.Argon2Parallelism
	return passwordhash.New(p)
}

// jwtOptions are the token adapter's options; `serve` and `userd keys`
// must agree on them, since the retirement of old keys is computed from
// them.
func jwtOptions(cfg config.Config, log *slog.Logger) jwtissuer.Options {
	opts := jwtissuer.Options{
		Issuer:       cfg.Issuer,
		Audience:     cfg.Audience,
		Algorithm:    cfg.JWTAlgorithm,
		TTL:          cfg.AccessTTL,
		OIDCProvider: cfg.OIDCProvider,
		Logger:       log,
	}
	if cfg.JWTHMACSecret != "" {
		opts.HMACSecret = []byte(cfg.JWTHMACSecret)
	}
	return opts
}

func newTokenIssuer(cfg config.Config, keys ports.KeyStore, clk ports.Clock, log *slog.Logger) (*jwtissuer.Issuer, error) {
	return jwtissuer.New(keys, clk, jwtOptions(cfg, log))
}

func newKeyManager(cfg config.Config, keys ports.KeyStore, clk ports.Clock, log *slog.Logger) (*jwtissuer.KeyManager, error) {
	return jwtissuer.NewKeyManager(keys, clk, jwtOptions(cfg, log))
}

// startTokens adds the token keys' start and stop to the lifecycle: load
// (or create) the signing keys and the refresh-token key, then run the
// issuer's reload loop until stop, which waits for it, so that a rotation
// made by the CLI or another node is picked up.
func startTokens(lc fx.Lifecycle, iss *jwtissuer.Issuer, codec *jwtissuer.RefreshCodec) {
	runInBackground(lc, "token keys", func(ctx context.Context) error {
		if err := iss.Start(ctx); err != nil {
			return err
		}
		return codec.Start(ctx)
	}, iss.Run)
}

// runInBackground adds the loop name to the lifecycle: at start, start
// (which may fail the start), then run in a goroutine until stop, which
// cancels run's context and waits for it to return. A stop that runs out
// of time names the loop that held it.
func runInBackground(lc fx.Lifecycle, name string, start func(context.Context) error, run func(context.Context)) {
	loop, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := start(ctx); err != nil {
				return err
			}
			go func() {
				defer close(done)
				run(loop)
			}()
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-stop.Done():
				return fmt.Errorf("%s still running: %w", name, stop.Err())
			}
		},
	})
}

type servicesParams struct {
	fx.In
	Config config.Config
	Stores ports.Stores
	Hasher ports.PasswordHasher
	Issuer ports.TokenIssuer
	Codec  ports.RefreshTokenCodec
	Keys   ports.AccessTokenKeys
	Mailer ports.Mailer
	OTP    ports.OneTimePasswords
	// RelyingParty runs the passkey ceremonies.
	RelyingParty ports.PasskeyRelyingParty
	// OAuthTokens is nil while the OpenID provider is off.
	OAuthTokens ports.OAuthTokens `optional:"true"`
	// Upstream speaks to the identity providers.
	Upstream ports.IdentityProviderClient
	// Webhooks is nil without USERD_WEBHOOK_URL.
	Webhooks ports.WebhookSender `optional:"true"`
	// ClaimsHook is nil without USERD_CLAIMS_HOOK_URL.
	ClaimsHook ports.ClaimsHook `optional:"true"`
	// Metrics, OutboxMetrics and PurgeMetrics are absent in the CLI
	// commands, whose events are stored but not counted.
	Metrics       ports.SecurityMetrics     `optional:"true"`
	OutboxMetrics ports.OutboxMetrics       `optional:"true"`
	PurgeMetrics  ports.PurgeMetrics        `optional:"true"`
	HookMetrics   ports.ClaimsHookMetrics   `optional:"true"`
	CacheMetrics  ports.AccountCacheMetrics `optional:"true"`
	Clock         ports.Clock
	Log           *slog.Logger
	// Tracing, when on, carries a request's trace to the delivery of
	// the messages it queued.
	Tracing *tracing.Tracing
}

func newServices(p servicesParams) (*application.Services, error) {
	return application.New(application.Deps{
		Stores: p.Stores, Hasher: p.Hasher, Issuer: p.Issuer, Codec: p.Codec, Keys: p.Keys, Mailer: p.Mailer,
		OTP: p.OTP, RelyingParty: p.RelyingParty, Webhooks: p.Webhooks, OAuthTokens: p.OAuthTokens,
		Upstream: p.Upstream, ClaimsHook: p.ClaimsHook, HookMetrics: p.HookMetrics, Metrics: p.Metrics, OutboxMetrics: p.OutboxMetrics,
		PurgeMetrics: p.PurgeMetrics, AccountCacheMetrics: p.CacheMetrics, Clock: p.Clock, Log: p.Log,
		Traces: p.Tracing.TraceContexts(),
	}, application.Config{
		OpenRegistration:         p.Config.OpenRegistration,
		RequireCurrentPassword:   p.Config.RequireCurrentPassword,
		RefreshTTL:               p.Config.RefreshTTL,
		RefreshFamilyTTL:         p.Config.RefreshFamilyTTL,
		RefreshReuseGrace:        p.Config.RefreshReuseGrace,
		ProviderIssuer:           p.Config.ProviderIssuer(),
		PublicURL:                p.Config.PublicURL,
		OIDCDynamicRegistration:  p.Config.OIDCDynamicRegistration,
		RequireEmailVerification: p.Config.RequireEmailVerification,
		VerifyEmailURL:           p.Config.VerifyEmailLink(),
		ResetPasswordURL:         p.Config.ResetPasswordLink(),
		VerifyEmailTTL:           p.Config.EmailVerificationTTL,
		ResetPasswordTTL:         p.Config.PasswordResetTTL,
		EmailSignIn:              p.Config.EmailSignIn,
		EmailSignUp:              p.Config.EmailSignUp,
		EmailCodeTTL:             p.Config.EmailCodeTTL,
		MagicLinkURL:             p.Config.MagicLinkLink(),
		MailBudget:               domain.MailBudget{MinInterval: p.Config.MailMinInterval, MaxPerHour: p.Config.MailMaxPerHour},
		WebhookEvents:            p.Config.WebhookEvents,
		EndedSessionKeep:         endedSessionKeep(p.Config),
		AccountCacheSize:         accountCacheSize(p.Config),
		PurgeInterval:            p.Config.PurgeInterval,
		AuditRetention:           p.Config.AuditRetention,
		ClaimsHookFailOpen:       p.Config.ClaimsHookFail == config.ClaimsHookFailOpen,
	})
}

// accountCacheSize is USERD_ACCOUNT_CACHE_SIZE as application.Config
// takes it: there 0 is the default size, and off is below 0.
func accountCacheSize(cfg config.Config) int {
	if cfg.AccountCacheSize == 0 {
		return -1
	}
	return cfg.AccountCacheSize
}

// endedSessionKeep is how long an access token may still verify after its
// session ended: its lifetime plus the verifier's leeway.
func endedSessionKeep(cfg config.Config) time.Duration {
	return cfg.AccessTTL + jwtissuer.DefaultLeeway
}

// runSessionEndings runs, while the server runs, the hearing of the
// sessions other nodes end (PostgreSQL LISTEN and a catch-up poll).
func runSessionEndings(lc fx.Lifecycle, endings *gormstore.SessionEndings) {
	runInBackground(lc, "session endings", endings.CatchUp, endings.Run)
}

// runDelivery runs the outbox's sender loop while the server runs, so
// that every node sends what any node queued. It stops before the
// database closes, giving the messages it holds back to the outbox (due
// at once, for the next node or start) rather than leaving them to their
// lease.
func runDelivery(lc fx.Lifecycle, svc *application.Services) {
	runInBackground(lc, "delivery", func(context.Context) error { return nil }, svc.Delivery.Run)
}

// runHousekeeping runs the purge loop while the server runs
// (USERD_PURGE_INTERVAL; 0 turns it off). Every node runs it; the lock
// keeps the passes to one node at a time. It stops, mid-pass if need be,
// before the database closes: what is left waits for the next pass.
func runHousekeeping(lc fx.Lifecycle, svc *application.Services) {
	runInBackground(lc, "housekeeping", func(context.Context) error { return nil }, svc.Housekeeping.Run)
}

type handlerParams struct {
	fx.In
	Config   config.Config
	Services *application.Services
	Health   ports.HealthChecker
	Clock    ports.Clock
	Log      *slog.Logger
	Metrics  *metrics.Metrics
	// Issuer publishes the JWK set.
	Issuer *jwtissuer.Issuer
	// Box seals the cookie of the web pages' sessions.
	Box ports.SecretBox
	// Registry is served at /metrics on the main address unless
	// USERD_METRICS_ADDR moves it to an address of its own.
	Registry *prometheus.Registry
	// LimitStore keeps the per-IP limits' buckets; nil keeps them in
	// memory.
	LimitStore ports.RateLimitStore
	// Tracing spans each request when traces are on.
	Tracing *tracing.Tracing
}

func newHandler(p handlerParams) http.Handler {
	pages := web.New(p.Services, web.Options{Logger: p.Log, Box: p.Box, Clock: p.Clock,
		AdminConsole: p.Config.AdminConsole})
	opts := httpapi.Options{
		Logger:          p.Log,
		Clock:           p.Clock,
		AuthIPLimit:     p.Config.AuthIPLimit,
		RegisterIPLimit: p.Config.RegisterIPLimit,
		IPv6Prefix:      p.Config.RateLimitIPv6Prefix,
		TrustedProxies:  p.Config.TrustedProxies,
		RequestTimeout:  p.Config.RequestTimeout,
		MaxInFlight:     p.Config.MaxInFlight,
		Pages:           pages,
		Provider:        newProviderHandler(p, pages),
		// The registration route exists only while it is open.
		ProviderRegistration: p.Config.OIDCProvider && p.Config.OIDCDynamicRegistration,
		Metrics:              p.Metrics,
		KeySet:               p.Issuer,
		Health:               p.Health,

		CORSAllowedOrigins: p.Config.CORSAllowedOrigins(),
		RefreshCookie:      p.Config.RefreshCookie,

		RateLimitStore:      p.LimitStore,
		RateLimitFailClosed: p.Config.RateLimitFail == config.RateLimitFailClosed,
		RateLimitMetrics:    p.Metrics,

		TracerProvider: p.Tracing.TracerProvider(),
		Propagator:     tracing.Propagator(),
	}
	if addr, _ := p.Config.ServeMetricsOn(); addr == "" {
		opts.MetricsHandler = metrics.Handler(p.Registry)
		opts.MetricsAllow = p.Config.MetricsAllow
	}
	return httpapi.New(p.Services, opts)
}

// newProviderHandler is the OpenID provider's handler, or nil (its routes
// 404) when USERD_OIDC_PROVIDER=false. Its error page is the pages' when
// they have one (web.Pages implementing oidcprovider.ErrorPage), else
// the adapter's plain one.
func newProviderHandler(p handlerParams, pages http.Handler) http.Handler {
	if !p.Config.OIDCProvider {
		return nil
	}
	if p.Services.Provider == nil {
		// Not built by this version of the application: no routes
		// rather than a handler over nothing.
		p.Log.Warn("the OpenID provider is on but the application has none; its routes are off")
		return nil
	}
	errorPage, _ := pages.(oidcprovider.ErrorPage)
	opts := oidcprovider.Options{
		Issuer:       p.Config.ProviderIssuer(),
		ContinuePath: "/oauth2/authorize/continue",
		ErrorPage:    errorPage,
		Logger:       p.Log,
	}
	if p.Config.OIDCDynamicRegistration {
		opts.Registrar = p.Services.OAuthClients
	}
	return oidcprovider.New(p.Services.Provider, opts)
}
