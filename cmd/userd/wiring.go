package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"text/tabwriter"
	"time"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// startTimeout bounds start-up: opening the database, migrating, loading keys.
const startTimeout = 30 * time.Second

// baseModule supplies the configuration and the logger.
func baseModule(cfg config.Config, logOut io.Writer) fx.Option {
	return fx.Module("base",
		fx.Supply(cfg),
		fx.Provide(func() *slog.Logger { return newLogger(cfg, logOut) }),
	)
}

func newLogger(cfg config.Config, out io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var h slog.Handler = slog.NewJSONHandler(out, opts)
	if cfg.LogFormat == config.LogFormatText {
		h = slog.NewTextHandler(out, opts)
	}
	return slog.New(httpapi.LogHandler(h))
}

// storeModule picks the storage adapter named by the configuration. Both
// modules bind the same ports, so nothing else changes with the backend.
func storeModule(cfg config.Config) fx.Option {
	if cfg.DBDriver == config.DriverMemory {
		return memoryModule
	}
	return sqlModule
}

// memoryModule keeps everything in process memory: tests, demos.
var memoryModule = fx.Module("memory",
	fx.Provide(
		memory.NewStore,
		fx.Annotate((*memory.Store).Users, fx.As(new(ports.UserRepository))),
		fx.Annotate((*memory.Store).RefreshTokens, fx.As(new(ports.RefreshTokenStore))),
		fx.Annotate((*memory.Store).LoginAttempts, fx.As(new(ports.LoginAttemptStore))),
		fx.Annotate((*memory.Store).Keys, fx.As(new(ports.KeyStore))),
		fx.Annotate(memory.NewAuditLog, fx.As(new(ports.AuditLog))),
		fx.Annotate(func(s *memory.Store) *memory.Store { return s }, fx.As(new(ports.HealthChecker))),
	),
	fx.Invoke(func(log *slog.Logger) {
		log.Warn("USERD_DB_DRIVER=memory: nothing is kept across restarts")
	}),
)

// sqlModule stores everything through GORM, on SQLite or PostgreSQL.
var sqlModule = fx.Module("sql",
	fx.Provide(
		openDatabase,
		fx.Annotate(gormstore.NewUserRepository, fx.As(new(ports.UserRepository))),
		fx.Annotate(gormstore.NewRefreshTokenStore, fx.As(new(ports.RefreshTokenStore))),
		fx.Annotate(gormstore.NewLoginAttemptStore, fx.As(new(ports.LoginAttemptStore))),
		fx.Annotate(gormstore.NewKeyStore, fx.As(new(ports.KeyStore))),
		fx.Annotate(gormstore.NewAuditLog, fx.As(new(ports.AuditLog))),
		fx.Annotate(func(db *gormstore.DB) *gormstore.DB { return db }, fx.As(new(ports.HealthChecker))),
	),
)

// openDatabase opens the configured database and brings its schema up to
// date; the pool closes when the app stops.
func openDatabase(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) (*gormstore.DB, error) {
	db, err := gormstore.Open(cfg.DBDriver, cfg.DBDSN, gormstore.Options{
		MaxOpenConns:    cfg.DBMaxOpenConns,
		MaxIdleConns:    cfg.DBMaxIdleConns,
		ConnMaxLifetime: cfg.DBConnMaxLifetime,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", cfg.DBDriver, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := prepareSchema(ctx, db, cfg.DBAutoMigrate); err != nil {
		_ = db.Close()
		return nil, err
	}
	log.Info("database ready", slog.String("driver", cfg.DBDriver))
	lc.Append(fx.StopHook(db.Close))
	return db, nil
}

// prepareSchema migrates the schema, or with auto-migration off checks that
// no migration is pending.
func prepareSchema(ctx context.Context, db *gormstore.DB, auto bool) error {
	if auto {
		if err := db.Migrate(ctx); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return nil
	}
	states, err := db.MigrationStatus(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	pending := 0
	for _, s := range states {
		if !s.Applied {
			pending++
		}
	}
	if pending > 0 {
		return fmt.Errorf("the database schema has %d pending migrations and USERD_DB_AUTO_MIGRATE=false: run `userd migrate up`", pending)
	}
	return nil
}

// httpModule serves the API: listen at start, graceful shutdown at stop.
var httpModule = fx.Module("http",
	fx.Provide(newHandler, newHTTPServer, newAdminServer),
	fx.Invoke(func(*http.Server, *adminServer) {}),
)

func newHTTPServer(lc fx.Lifecycle, cfg config.Config, handler http.Handler, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Addr:              cfg.HTTPAddr,
		Handler:           handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			// Listen here, not in the goroutine, so that a taken port fails
			// the start instead of a log line after it.
			ln, err := net.Listen("tcp", srv.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", srv.Addr, err)
			}
			log.Info("userd listening", slog.String("addr", ln.Addr().String()), slog.String("version", version))
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("http server stopped", slog.String("error", err.Error()))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			log.Info("userd shutting down")
			return srv.Shutdown(ctx)
		},
	})
	return srv
}

// bootstrapAdmin creates USERD_BOOTSTRAP_ADMIN_EMAIL at start when set and
// not registered yet.
func bootstrapAdmin(lc fx.Lifecycle, cfg config.Config, users *application.UserService, log *slog.Logger) {
	if cfg.BootstrapAdminEmail == "" {
		return
	}
	lc.Append(fx.StartHook(func(ctx context.Context) error {
		u, created, err := users.EnsureAdmin(ctx, cfg.BootstrapAdminName, cfg.BootstrapAdminEmail, cfg.BootstrapAdminPassword)
		if err != nil {
			return fmt.Errorf("bootstrap admin: %w", err)
		}
		if created {
			log.Info("bootstrap admin created", slog.String("user_id", u.ID.String()))
		}
		return nil
	}))
}

// serverOptions are the fx options of `userd serve`.
func serverOptions(cfg config.Config, logOut io.Writer) fx.Option {
	return fx.Options(
		fx.NopLogger,
		fx.StartTimeout(startTimeout),
		fx.StopTimeout(cfg.ShutdownTimeout),
		baseModule(cfg, logOut),
		storeModule(cfg),
		appModule,
		metricsModule,
		// A module before httpModule: start hooks run in the order they
		// were added, fx runs modules' invokes before the root's, and the
		// bootstrap admin must exist before /readyz says 200.
		fx.Module("bootstrap", fx.Invoke(bootstrapAdmin)),
		httpModule,
	)
}

// defaultMemoryLimit is the Go runtime's soft memory limit when GOMEMLIMIT
// is not set. Each password hash allocates 19 MiB that is garbage a moment
// later; with only the default GOGC the heap target doubles that churn, and
// RSS under logins sits near 150 MiB although little is live. Near the
// limit the collector runs sooner instead. It is soft: a larger live heap
// is never refused, only collected more eagerly.
const defaultMemoryLimit = 96 << 20

func serve() error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	app := fx.New(serverOptions(cfg, os.Stderr))
	if err := app.Err(); err != nil {
		return err
	}
	// Run starts the app, blocks until SIGINT or SIGTERM, then stops it
	// within the configured grace.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return err
	}
	sig := <-app.Wait()
	stopCtx, stopCancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer stopCancel()
	if err := app.Stop(stopCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if sig.ExitCode != 0 {
		return fmt.Errorf("exit code %d", sig.ExitCode)
	}
	return nil
}

// createAdmin runs `userd admin create` over the configured store.
func createAdmin(name, email, password string, stdout io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if cfg.DBDriver == config.DriverMemory {
		return errors.New("admin create: USERD_DB_DRIVER=memory keeps nothing; use USERD_BOOTSTRAP_ADMIN_* instead")
	}
	var users *application.UserService
	app := fx.New(fx.NopLogger, baseModule(cfg, os.Stderr), storeModule(cfg), appModule, fx.Populate(&users))
	if err := app.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = app.Stop(context.Background()) }()
	u, created, err := users.EnsureAdmin(ctx, name, email, password)
	if err != nil {
		var verr *domain.ValidationError
		if errors.As(err, &verr) {
			return fmt.Errorf("admin create: %s", verr.Error())
		}
		return err
	}
	if !created {
		return fmt.Errorf("admin create: %s is already registered (user %s)", u.Email, u.ID)
	}
	fmt.Fprintf(stdout, "created admin %s (%s)\n", u.ID, u.Email)
	return nil
}

// keys runs `userd keys rotate|list` over the configured store.
func keys(action string, stdout io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if cfg.DBDriver == config.DriverMemory {
		return errors.New("keys: USERD_DB_DRIVER=memory keeps nothing; the keys live in the database of the nodes")
	}
	if action == "rotate" && cfg.JWTHMACSecret != "" {
		return errors.New("keys rotate: the signing key is USERD_JWT_HMAC_SECRET, not stored; rotate it by changing that setting")
	}
	var (
		store ports.KeyStore
		clk   ports.Clock
		log   *slog.Logger
		audit *application.AuditService
	)
	app := fx.New(fx.NopLogger, baseModule(cfg, os.Stderr), storeModule(cfg), appModule, fx.Populate(&store, &clk, &log, &audit))
	if err := app.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = app.Stop(context.Background()) }()

	opts := jwtOptions(cfg, log)
	retireAfter := opts.RetireAfter()
	if action == "rotate" {
		k, err := jwtissuer.Rotate(ctx, store, clk, opts)
		if err != nil {
			return err
		}
		// The key is in use either way; a lost audit event is logged, not fatal.
		_ = audit.KeyRotated(ctx, k.KID, k.Algorithm)
		fmt.Fprintf(stdout, "created %s key %s\nevery node signs with it within %s; the older keys retire at %s\n",
			k.Algorithm, k.KID, jwtissuer.ReloadInterval, k.CreatedAt.Add(retireAfter).UTC().Format(time.RFC3339))
		return nil
	}

	list, err := jwtissuer.ListKeys(ctx, store, clk, opts)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "no access-token keys yet: `userd serve` or `userd keys rotate` creates one")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tALGORITHM\tCREATED\tSTATUS\tRETIRES")
	for _, k := range list {
		created, retires := k.CreatedAt.UTC().Format(time.RFC3339), "-"
		if k.Configured {
			created = "(USERD_JWT_HMAC_SECRET)"
		}
		if !k.RetiresAt.IsZero() {
			retires = k.RetiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.KID, k.Algorithm, created, k.Status, retires)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nactive signs; published verifies until it retires %s after the next key was created\n"+
		"(reload %s + USERD_ACCESS_TTL %s + leeway %s); ignored is not %s and never used.\n",
		retireAfter, jwtissuer.ReloadInterval, cfg.AccessTTL, jwtissuer.DefaultLeeway, cfg.JWTAlgorithm)
	return nil
}

// migrate runs `userd migrate up|status`.
func migrate(action string, stdout io.Writer) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if cfg.DBDriver == config.DriverMemory {
		return errors.New("migrate: USERD_DB_DRIVER=memory has no schema")
	}
	db, err := gormstore.Open(cfg.DBDriver, cfg.DBDSN, gormstore.Options{MaxOpenConns: 1})
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if action == "up" {
		if err := db.Migrate(ctx); err != nil {
			return err
		}
	}
	states, err := db.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	for _, s := range states {
		state := "pending"
		if s.Applied {
			state = "applied " + s.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "%04d  %-32s  %s\n", s.Version, s.Name, state)
	}
	return nil
}
