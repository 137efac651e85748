package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
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
