package main

// The application's constructors: the security adapters and the use
// cases, and the HTTP handler over them. They are being replaced by one
// application.New(deps, cfg) and a token issuer that loads its keys in
// OnStart; the wiring around them lives in the other files.

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// appModule provides the security adapters and the use cases.
var appModule = fx.Module("application",
	fx.Provide(
		fx.Annotate(func() clock.System { return clock.System{} }, fx.As(new(ports.Clock))),
		fx.Annotate(newPasswordHasher, fx.As(new(ports.PasswordHasher))),
		fx.Annotate(newTokenIssuer, fx.As(fx.Self()), fx.As(new(ports.TokenIssuer))),
		newEvents,
		newUserService,
		newAuthService,
		newAuditService,
	),
)

func newPasswordHasher(cfg config.Config) *passwordhash.Hasher {
	p := passwordhash.DefaultParams()
	p.Memory, p.Iterations, p.Parallelism = cfg.Argon2MemoryKiB, cfg.Argon2Iterations, cfg.Argon2Parallelism
	return passwordhash.New(p)
}

// jwtOptions are the token issuer's options; `serve` and `userd keys` must
// agree on them, since the retirement of old keys is computed from them.
func jwtOptions(cfg config.Config, log *slog.Logger) jwtissuer.Options {
	opts := jwtissuer.Options{
		Issuer:    cfg.Issuer,
		Audience:  cfg.Audience,
		Algorithm: cfg.JWTAlgorithm,
		TTL:       cfg.AccessTTL,
		Logger:    log,
	}
	if cfg.JWTHMACSecret != "" {
		opts.HMACSecret = []byte(cfg.JWTHMACSecret)
	}
	return opts
}

// newTokenIssuer loads (or creates) the signing keys, and reloads them in
// the background while the app runs so that a rotation made by the CLI or
// another node is picked up.
func newTokenIssuer(lc fx.Lifecycle, cfg config.Config, keys ports.KeyStore, clk ports.Clock, log *slog.Logger) (*jwtissuer.Issuer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	iss, err := jwtissuer.New(ctx, keys, clk, jwtOptions(cfg, log))
	if err != nil {
		return nil, err
	}
	lc.Append(keyReloadHook(iss))
	return iss, nil
}

// keyReloadHook runs iss.Run from start to stop; stopping waits for it.
func keyReloadHook(iss *jwtissuer.Issuer) fx.Hook {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	return fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				iss.Run(ctx)
			}()
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
				return nil
			case <-stop.Done():
				return stop.Err()
			}
		},
	}
}

func newUserService(cfg config.Config, users ports.UserRepository, tokens ports.RefreshTokenStore,
	attempts ports.LoginAttemptStore, hasher ports.PasswordHasher, clk ports.Clock, log *slog.Logger,
	events *application.Events) *application.UserService {
	return application.NewUserService(users, tokens, attempts, hasher, clk, application.UserServiceConfig{
		OpenRegistration:       cfg.OpenRegistration,
		RequireCurrentPassword: cfg.RequireCurrentPassword,
	}, log, application.WithEvents(events))
}

type authServiceParams struct {
	fx.In
	Config   config.Config
	Users    ports.UserRepository
	Tokens   ports.RefreshTokenStore
	Attempts ports.LoginAttemptStore
	Keys     ports.KeyStore
	Hasher   ports.PasswordHasher
	Issuer   ports.TokenIssuer
	Clock    ports.Clock
	Log      *slog.Logger
	Events   *application.Events
}

func newAuthService(p authServiceParams) (*application.AuthService, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return application.NewAuthService(ctx, application.AuthDeps{
		Users: p.Users, Tokens: p.Tokens, Attempts: p.Attempts, Keys: p.Keys,
		Hasher: p.Hasher, Issuer: p.Issuer, Clock: p.Clock, Events: p.Events,
	}, application.AuthServiceConfig{
		RefreshTTL:        p.Config.RefreshTTL,
		RefreshFamilyTTL:  p.Config.RefreshFamilyTTL,
		RefreshReuseGrace: p.Config.RefreshReuseGrace,
	}, p.Log)
}

type eventsParams struct {
	fx.In
	Audit ports.AuditLog
	// Metrics is absent in the CLI commands.
	Metrics ports.SecurityMetrics `optional:"true"`
	Clock   ports.Clock
	Log     *slog.Logger
}

func newEvents(p eventsParams) *application.Events {
	return application.NewEvents(p.Audit, p.Metrics, p.Clock, p.Log)
}

func newAuditService(users ports.UserRepository, audit ports.AuditLog, events *application.Events) *application.AuditService {
	return application.NewAuditService(users, audit, events)
}

type handlerParams struct {
	fx.In
	Config  config.Config
	Users   *application.UserService
	Auth    *application.AuthService
	Audit   *application.AuditService
	Health  ports.HealthChecker
	Clock   ports.Clock
	Log     *slog.Logger
	Metrics *metrics.Metrics
	// Issuer publishes the JWK set.
	Issuer *jwtissuer.Issuer
	// Registry is served at /metrics on the main address unless
	// USERD_ADMIN_ADDR moves it to an address of its own.
	Registry *prometheus.Registry
}

func newHandler(p handlerParams) http.Handler {
	opts := httpapi.Options{
		Logger:         p.Log,
		Clock:          p.Clock,
		AuthIPLimit:    p.Config.AuthIPLimit,
		TrustedProxies: p.Config.TrustedProxies,
		RequestTimeout: p.Config.RequestTimeout,
		MaxInFlight:    p.Config.MaxInFlight,
		Audit:          p.Audit,
		Metrics:        p.Metrics,
		KeySet:         p.Issuer,
	}
	if p.Config.AdminAddr == "" {
		opts.MetricsHandler = metrics.Handler(p.Registry)
	}
	return httpapi.New(p.Users, p.Auth, p.Health, opts)
}
