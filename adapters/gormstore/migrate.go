package gormstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationFiles holds the schema's history as goose SQL files, one
// directory per dialect: migrations/sqlite, migrations/postgres and
// migrations/mysql, each with the same versions and names
// (migrations/README.md gives the naming rule and how to add a step).
//
//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// versionTable is goose's record of the applied migrations.
const versionTable = goose.DefaultTablename

// legacyTable is where userd recorded its steps before goose. It is read,
// never written, and kept: an older node still running during a rolling
// upgrade reads it.
const legacyTable = "schema_migrations"

// MigrationState is one schema step and whether it has been applied.
type MigrationState struct {
	Version int
	Name    string
	// Applied is false for a pending step.
	Applied bool
	// AppliedAt is when the step was applied; zero when pending.
	AppliedAt time.Time
}

// Migrate applies every pending schema step with goose, each in its own
// transaction together with its row in goose's version table, so that a
// step is applied completely or not at all. Running it again, or from
// several instances at once, is harmless: on PostgreSQL and MySQL goose's
// session locker serialises the instances. A database made before goose has its
// steps recorded in goose's table first, so none is run twice. Migrate
// refuses a database that has steps this binary does not know: an older
// binary must not write to a newer schema.
func (db *DB) Migrate(ctx context.Context) error {
	var locker lock.SessionLocker
	var opts []goose.ProviderOption
	switch db.dialect {
	case dialectPostgres:
		var err error
		if locker, err = db.migrationLocker(ctx); err != nil {
			return storeError("migrate: lock", err)
		}
	case dialectMySQL:
		// Polled every second, for up to five minutes, as on PostgreSQL.
		locker = mysqlMigrationLocker{poll: time.Second, timeout: 5 * time.Minute}
	}
	if locker != nil {
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := db.migrationProvider(opts...)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := db.prepareVersionTable(ctx, locker); err != nil {
		return storeError("migrate: prepare "+versionTable, err)
	}
	applied, err := db.appliedMigrations(ctx)
	if err != nil {
		return storeError("migrate: read schema version", err)
	}
	sources := p.ListSources()
	latest := sources[len(sources)-1].Version
	if newest := maxKey(applied); newest > latest {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", newest, latest)
	}
	if err := db.up(ctx, p, len(sources)); err != nil {
		return storeError("migrate", err)
	}
	return nil
}

// up runs goose's Up. SQLite has no lock that goose can hold across its
// transactions, so processes sharing a file are not serialised; but each
// step runs in a BEGIN IMMEDIATE transaction with its version row, so a
// process whose step fails because another process has just applied it
// finds that step recorded, and starts again from the steps now applied.
// At most one retry per step.
func (db *DB) up(ctx context.Context, p *goose.Provider, steps int) error {
	for attempt := 0; ; attempt++ {
		_, err := p.Up(ctx)
		var partial *goose.PartialError
		if err == nil || db.dialect != dialectSQLite || attempt >= steps || !errors.As(err, &partial) {
			return err
		}
		applied, readErr := db.appliedMigrations(ctx)
		if readErr != nil {
			return errors.Join(err, readErr)
		}
		if _, ok := applied[partial.Failed.Source.Version]; !ok {
			return err
		}
	}
}

// migrationDialect returns goose's dialect for the database and the
// directory of migrationFiles holding its steps.
func (db *DB) migrationDialect() (goose.Dialect, string) {
	switch db.dialect {
	case dialectPostgres:
		return goose.DialectPostgres, "postgres"
	case dialectMySQL:
		return goose.DialectMySQL, "mysql"
	}
	return goose.DialectSQLite3, "sqlite"
}

// migrationProvider returns a goose provider over the writer's pool: on
// SQLite its single connection, which goose holds while it migrates.
func (db *DB) migrationProvider(opts ...goose.ProviderOption) (*goose.Provider, error) {
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return nil, err
	}
	dialect, dir := db.migrationDialect()
	fsys, err := fs.Sub(migrationFiles, "migrations/"+dir)
	if err != nil {
		return nil, err
	}
	// No Go migrations: every step is reviewed SQL, and another package's
	// goose.AddMigration must not slip into userd's schema.
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}, opts...)
	return goose.NewProvider(dialect, sqlDB, fsys, opts...)
}

// migrationLocker returns goose's PostgreSQL session locker. Its advisory
// lock is keyed by the schema the tables go to (the first of search_path
// that exists, where goose puts its table too): advisory locks are per
// database, the nodes of one deployment share a schema, and deployments
// or tests in other schemas of the same database need not wait for them.
// The lock is polled every second, for up to five minutes or until ctx
// ends; goose's default of every 5 s would hold up each node that starts
// while another migrates.
func (db *DB) migrationLocker(ctx context.Context) (lock.SessionLocker, error) {
	var schema sql.NullString
	if err := db.gorm.WithContext(ctx).Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return nil, err
	}
	if !schema.Valid {
		return nil, errors.New("no schema of search_path exists to create the tables in")
	}
	h := fnv.New64a()
	// A hash.Hash's Write never returns an error.
	_, _ = h.Write([]byte("userd migrations " + schema.String))
	// The lock key is the hash's 64 bits read as a bigint, negative or not.
	lockID := int64(h.Sum64()) //nolint:gosec // G115: a deliberate bit-for-bit reinterpretation; every node derives the same key from the schema name
	return lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, 300))
}

// MigrationStatus lists every step this binary knows, applied or pending,
// in order, followed by any applied step it does not know (Name empty). On
// a database made before goose and not migrated since, it reports the steps
// recorded in schema_migrations, which Migrate adopts as they are.
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, err := db.migrationProvider()
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	applied, err := db.appliedMigrations(ctx)
	if err != nil {
		return nil, storeError("migration status", err)
	}
	var out []MigrationState
	for _, s := range p.ListSources() {
		m := MigrationState{Version: int(s.Version), Name: migrationName(s.Path)}
		if at, ok := applied[s.Version]; ok {
			m.Applied, m.AppliedAt = true, at
			delete(applied, s.Version)
		}
		out = append(out, m)
	}
	for _, v := range slices.Sorted(maps.Keys(applied)) {
		out = append(out, MigrationState{Version: int(v), Applied: true, AppliedAt: applied[v]})
	}
	return out, nil
}

// migrationName turns a file name, 00002_create_refresh_tokens.sql, into
// the step's name, "create refresh tokens".
func migrationName(file string) string {
	_, name, _ := strings.Cut(strings.TrimSuffix(path.Base(file), ".sql"), "_")
	return strings.ReplaceAll(name, "_", " ")
}

func maxKey(m map[int64]time.Time) int64 {
	var newest int64
	for v := range m {
		newest = max(newest, v)
	}
	return newest
}
