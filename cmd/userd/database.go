package main

import (
	"context"
	"fmt"
	"log/slog"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/config"
)

// sqlModule stores everything through GORM, on SQLite, PostgreSQL or
// MySQL. Its database opens at start, and its schema is brought up to date
// (or checked) before the start hook of anything that uses it.
var sqlModule = fx.Module("sql",
	fx.Provide(
		newStoreDatabase,
		newSessionEndings,
		gormstore.NewStores,
		// The key and TOTP stores themselves, for sealing clear keys at
		// start and `userd secrets reencrypt`.
		gormstore.NewKeyStore,
		gormstore.NewMFAStore,
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

// sealModule seals, at start, the keys an earlier version stored in clear.
// Every command on the SQL store runs it, except `userd secrets
// reencrypt`, which does that and more, and counts it.
var sealModule = fx.Module("seal", fx.Invoke(sealClearKeys))

// databaseModule is the bare database, for `userd migrate`, which manages
// the schema itself: opened at start, closed at stop.
var databaseModule = fx.Module("database", fx.Provide(newDatabase))

func newGormDB(cfg config.Config, log *slog.Logger) (*gormstore.DB, error) {
	return gormstore.New(cfg.DBDriver, cfg.DBDSN, gormstore.Options{
		MaxOpenConns:    cfg.DBMaxOpenConns,
		MaxIdleConns:    cfg.DBMaxIdleConns,
		ConnMaxLifetime: cfg.DBConnMaxLifetime,
		Logger:          log,
	})
}

// newDatabase builds the configured database without touching it; it
// opens at start and closes at stop.
func newDatabase(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) (*gormstore.DB, error) {
	db, err := newGormDB(cfg, log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: db.Open,
		OnStop:  func(context.Context) error { return db.Close() },
	})
	return db, nil
}

// newStoreDatabase builds the configured database without touching it.
// At start it opens, and its schema is migrated or, with
// USERD_DB_AUTO_MIGRATE=false, checked; at stop it closes. The hook is
// appended here, before any constructor that takes the database can
// append its own, so it runs first.
func newStoreDatabase(lc fx.Lifecycle, cfg config.Config, log *slog.Logger) (*gormstore.DB, error) {
	db, err := newGormDB(cfg, log)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := db.Open(ctx); err != nil {
				return err
			}
			if err := prepareSchema(ctx, db, cfg.DBAutoMigrate); err != nil {
				_ = db.Close()
				return err
			}
			log.Info("database ready", slog.String("driver", cfg.DBDriver))
			return nil
		},
		OnStop: func(context.Context) error { return db.Close() },
	})
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
