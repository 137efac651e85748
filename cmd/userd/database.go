package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/tracing"
	"github.com/userd/userd/config"
)

// sqlModule stores everything through GORM, on SQLite, PostgreSQL or
// MySQL. Its database is built without being touched; it opens, and its
// schema is brought up to date, at start (openDatabase, in startStore).
var sqlModule = fx.Module("sql",
	fx.Provide(
		newGormDB,
		newSessionEndings,
		gormstore.NewStores,
		// The key, TOTP and identity-provider stores themselves, for
		// sealing clear keys at start and `userd secrets reencrypt`.
		gormstore.NewKeyStore,
		gormstore.NewMFAStore,
		gormstore.NewIdentityProviderStore,
	),
)

// newSessionEndings carries ended sessions between the nodes of a
// PostgreSQL store (NOTIFY and a poll) or a MySQL one (the poll); on SQLite
// it does nothing.
func newSessionEndings(db *gormstore.DB, cfg config.Config, log *slog.Logger) *gormstore.SessionEndings {
	return gormstore.NewSessionEndings(db, gormstore.SessionEndingsOptions{
		Keep: endedSessionKeep(cfg), Logger: log,
	})
}

// databaseModule is the bare database, for `userd migrate`, which manages
// the schema itself: opened at start, closed at stop (startMigrate).
var databaseModule = fx.Module("database", fx.Provide(newGormDB), fx.Invoke(startMigrate))

// newGormDB builds the configured database without touching it.
func newGormDB(cfg config.Config, log *slog.Logger, t *tracing.Tracing) (*gormstore.DB, error) {
	return gormstore.New(cfg.DBDriver, cfg.DBDSN, gormstore.Options{
		MaxOpenConns:    cfg.DBMaxOpenConns,
		MaxIdleConns:    cfg.DBMaxIdleConns,
		ConnMaxLifetime: cfg.DBConnMaxLifetime,
		Logger:          log,
		TracerProvider:  t.TracerProvider(),
	})
}

// openDatabase is the start step that opens db, and with migrate migrates
// its schema or, with USERD_DB_AUTO_MIGRATE=false, checks it; at stop it
// closes db.
func openDatabase(cfg config.Config, log *slog.Logger, db *gormstore.DB, migrate bool) fx.Hook {
	return fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := db.Open(ctx); err != nil {
				return err
			}
			if !migrate {
				return nil
			}
			if err := prepareSchema(ctx, db, cfg.DBAutoMigrate); err != nil {
				_ = db.Close()
				return err
			}
			log.Info("database ready", slog.String("driver", cfg.DBDriver))
			return nil
		},
		OnStop: func(context.Context) error { return db.Close() },
	}
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
