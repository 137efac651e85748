package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.uber.org/dig"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// startTimeout bounds start-up: opening the database, migrating, loading keys.
const startTimeout = 30 * time.Second

// loadConfig loads the configuration of a command. A command that works
// on the database of the nodes refuses USERD_DB_DRIVER=memory, where
// nothing it did would last, with memoryRefusal as the reason; the others
// pass "".
func loadConfig(memoryRefusal string) (config.Config, error) {
	cfg, err := config.Load()
	if err != nil {
		return config.Config{}, err
	}
	if memoryRefusal != "" && cfg.DBDriver == config.DriverMemory {
		return config.Config{}, errors.New(memoryRefusal)
	}
	return cfg, nil
}

// withServices runs fn with the use cases over the configured store
// within startTimeout, for an operator's command that acts on the
// database directly (`userd clients`, `userd identity-providers`, `userd
// tokens`): memoryRefusal says why the memory store cannot serve it.
func (r *root) withServices(ctx context.Context, memoryRefusal string, fn func(context.Context, *application.Services) error) error {
	cfg, err := loadConfig(memoryRefusal)
	if err != nil {
		return err
	}
	var svc *application.Services
	return withApp(ctx, cfg, commandOptions(cfg, r.stderr, &svc), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		return fn(ctx, svc)
	})
}

// withApp is the one path by which a command builds and runs the app: it
// builds the fx app of options, starts it within startTimeout, runs fn,
// and stops it within USERD_SHUTDOWN_TIMEOUT. fn reaches the app's values
// through an fx.Populate among the options.
func withApp(ctx context.Context, cfg config.Config, options fx.Option, fn func(context.Context) error) (err error) {
	app := fx.New(fx.NopLogger, options)
	if err := app.Err(); err != nil {
		// A constructor's error says what is wrong (it names the setting
		// or file); fx's chain of the functions it was building for adds
		// only noise to a person reading it.
		return dig.RootCause(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		if stopErr := app.Stop(stopCtx); stopErr != nil && err == nil {
			err = fmt.Errorf("shutdown: %w", stopErr)
		}
	}()
	return fn(ctx)
}

// commandOptions are the fx options of a command that uses the services:
// the configuration, the logger on logOut, the store and the application,
// without the metrics or the HTTP server. populate receives the values the
// command uses.
func commandOptions(cfg config.Config, logOut io.Writer, populate ...any) fx.Option {
	return fx.Options(baseModule(cfg, logOut), storeModule(cfg), mailModule, factorsModule, webhooksModule, appModule,
		fx.Invoke(startCommand), fx.Populate(populate...))
}

// serverOptions are the fx options of `userd serve`.
func serverOptions(cfg config.Config, logOut io.Writer) fx.Option {
	return fx.Options(
		fx.NopLogger,
		fx.StartTimeout(startTimeout),
		fx.StopTimeout(cfg.ShutdownTimeout),
		baseModule(cfg, logOut),
		storeModule(cfg),
		mailModule,
		factorsModule,
		webhooksModule,
		appModule,
		metricsModule,
		// At the root, so that the application's hasher is the counted
		// one: a decoration applies to its scope and those below it.
		fx.Decorate(countHashing),
		traceDeliveries,
		fx.Invoke(warnDeprecated),
		rateLimitModule,
		httpModule,
		// The one invoke that starts anything: its steps, in order.
		fx.Invoke(startServer),
	)
}

// warnDeprecated logs, once at start, each deprecated setting in use.
func warnDeprecated(cfg config.Config, log *slog.Logger) {
	for _, w := range cfg.Deprecations() {
		log.Warn(w)
	}
}

// baseModule supplies the configuration, the logger and the tracing
// (off unless the OTEL_* variables turn it on).
func baseModule(cfg config.Config, logOut io.Writer) fx.Option {
	return fx.Module("base",
		fx.Supply(cfg),
		fx.Provide(func() *slog.Logger { return newLogger(cfg, logOut) }),
		fx.Provide(newTracing, newOutgoingTransport),
	)
}

func newLogger(cfg config.Config, out io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewJSONHandler(out, opts)
	if cfg.LogFormat == config.LogFormatText {
		h = slog.NewTextHandler(out, opts)
	}
	log := slog.New(httpapi.LogHandler(h))
	// A library that logs through slog's default (zitadel/oidc: a line
	// per route at start, a warning per OAuth error it answers) writes in
	// userd's format and stream, errors only: the provider's adapter logs
	// what userd did not expect itself, and an OAuth refusal is the
	// client's mistake, not the operator's.
	slog.SetDefault(slog.New(errorsOnly{log.Handler()}))
	return log
}

// errorsOnly passes records of level Error and above to its handler.
type errorsOnly struct{ slog.Handler }

func (h errorsOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelError && h.Handler.Enabled(ctx, l)
}

func (h errorsOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return errorsOnly{h.Handler.WithAttrs(attrs)}
}

func (h errorsOnly) WithGroup(name string) slog.Handler { return errorsOnly{h.Handler.WithGroup(name)} }

// storeModule picks the storage adapter named by the configuration, with
// the secret box it seals with. Each hands over its ports as one
// ports.Stores, so nothing else changes with the backend; storePorts gives
// the adapters that take a store port of their own theirs.
func storeModule(cfg config.Config) fx.Option {
	if cfg.DBDriver == config.DriverMemory {
		return fx.Options(secretsModule, memoryModule, storePorts)
	}
	return fx.Options(secretsModule, sqlModule, storePorts)
}

// storePorts are the ports of the store that adapters other than the
// application take: the token adapter's key store, the readiness check,
// and the outbox whose backlog the metrics show.
var storePorts = fx.Provide(
	func(s ports.Stores) ports.KeyStore { return s.Keys },
	func(s ports.Stores) ports.HealthChecker { return s.Health },
	func(s ports.Stores) ports.Outbox { return s.Outbox },
)

// memoryModule keeps everything in process memory: tests, demos.
var memoryModule = fx.Module("memory",
	fx.Provide(newMemoryStores),
	fx.Invoke(func(log *slog.Logger) {
		log.Warn("USERD_DB_DRIVER=memory: nothing is kept across restarts")
	}),
)

// newMemoryStores is a fresh memory store, its audit log included.
func newMemoryStores(box ports.SecretBox) ports.Stores {
	return memory.NewStore().Stores(box, memory.NewAuditLog())
}

// bootstrapAdmin is the start step that creates
// USERD_BOOTSTRAP_ADMIN_EMAIL when it is not registered yet.
func bootstrapAdmin(cfg config.Config, svc *application.Services, log *slog.Logger) fx.Hook {
	return fx.StartHook(func(ctx context.Context) error {
		u, created, err := svc.Users.EnsureAdmin(ctx, cfg.BootstrapAdminName, cfg.BootstrapAdminEmail, cfg.BootstrapAdminPassword)
		if errors.Is(err, application.ErrEmailHeldByNonAdmin) {
			return fmt.Errorf("bootstrap admin: USERD_BOOTSTRAP_ADMIN_EMAIL %s belongs to account %s, which does not hold ROLE_ADMIN: "+
				"make that account an admin (PUT its profiles as an admin) or set another email", u.Email, u.ID)
		}
		if err != nil {
			return fmt.Errorf("bootstrap admin: %w", err)
		}
		if created {
			log.Info("bootstrap admin created", slog.String("user_id", u.ID.String()))
		}
		return nil
	})
}
