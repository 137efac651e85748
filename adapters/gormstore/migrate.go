package gormstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migration is one numbered schema step. Shared holds statements valid on
// both databases; SQLite and Postgres hold the dialect-specific ones and,
// when set, replace Shared for that database.
type migration struct {
	version  int
	name     string
	shared   []string
	sqlite   []string
	postgres []string
}

// migrations is the schema's history, in order. Append only: never edit or
// renumber a step that has shipped, add a new one.
//
// On PostgreSQL, ids that are sorted (users.id for list order, keys.id as
// the key order's tie-breaker) use the "C" collation so that the database
// orders them bytewise, as Go and SQLite do; the columns referencing
// users.id share it.
var migrations = []migration{
	{
		version: 1,
		name:    "create users",
		sqlite: []string{
			`CREATE TABLE users (
				id            TEXT   NOT NULL PRIMARY KEY,
				name          TEXT   NOT NULL,
				email         TEXT   NOT NULL,
				password_hash TEXT   NOT NULL,
				profiles      TEXT   NOT NULL,
				created_at    BIGINT NOT NULL,
				updated_at    BIGINT NOT NULL
			)`,
			`CREATE UNIQUE INDEX users_email_key ON users (email)`,
		},
		postgres: []string{
			`CREATE TABLE users (
				id            TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				name          TEXT   NOT NULL,
				email         TEXT   NOT NULL,
				password_hash TEXT   NOT NULL,
				profiles      TEXT   NOT NULL,
				created_at    BIGINT NOT NULL,
				updated_at    BIGINT NOT NULL
			)`,
			`CREATE UNIQUE INDEX users_email_key ON users (email)`,
		},
	},
	{
		version: 2,
		name:    "create refresh token families and tokens",
		sqlite: []string{
			`CREATE TABLE refresh_families (
				id         TEXT   NOT NULL PRIMARY KEY,
				user_id    TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL,
				revoked_at BIGINT NULL
			)`,
			`CREATE INDEX refresh_families_user_id_idx ON refresh_families (user_id)`,
			`CREATE TABLE refresh_tokens (
				token_hash     TEXT   NOT NULL PRIMARY KEY,
				family_id      TEXT   NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
				user_id        TEXT   NOT NULL,
				issued_at      BIGINT NOT NULL,
				expires_at     BIGINT NOT NULL,
				used_at        BIGINT NULL,
				successor_hash TEXT   NULL
			)`,
			`CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id)`,
		},
		postgres: []string{
			`CREATE TABLE refresh_families (
				id         TEXT   NOT NULL PRIMARY KEY,
				user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
				created_at BIGINT NOT NULL,
				expires_at BIGINT NOT NULL,
				revoked_at BIGINT NULL
			)`,
			`CREATE INDEX refresh_families_user_id_idx ON refresh_families (user_id)`,
			`CREATE TABLE refresh_tokens (
				token_hash     TEXT   NOT NULL PRIMARY KEY,
				family_id      TEXT   NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
				user_id        TEXT COLLATE "C" NOT NULL,
				issued_at      BIGINT NOT NULL,
				expires_at     BIGINT NOT NULL,
				used_at        BIGINT NULL,
				successor_hash TEXT   NULL
			)`,
			`CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id)`,
		},
	},
	{
		version: 3,
		name:    "create login attempts",
		shared: []string{
			`CREATE TABLE login_attempts (
				email           TEXT    NOT NULL PRIMARY KEY,
				failures        INTEGER NOT NULL,
				last_failure_at BIGINT  NOT NULL
			)`,
		},
	},
	{
		version: 4,
		name:    "create keys",
		sqlite: []string{
			`CREATE TABLE keys (
				id         TEXT   NOT NULL PRIMARY KEY,
				purpose    TEXT   NOT NULL,
				algorithm  TEXT   NOT NULL,
				secret     BLOB   NOT NULL,
				created_at BIGINT NOT NULL
			)`,
			`CREATE INDEX keys_purpose_idx ON keys (purpose, created_at, id)`,
		},
		postgres: []string{
			`CREATE TABLE keys (
				id         TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				purpose    TEXT   NOT NULL,
				algorithm  TEXT   NOT NULL,
				secret     BYTEA  NOT NULL,
				created_at BIGINT NOT NULL
			)`,
			`CREATE INDEX keys_purpose_idx ON keys (purpose, created_at, id)`,
		},
	},
	{
		// No foreign keys to users: the trail outlives the accounts it
		// mentions. The primary key is the index of the keyset pages.
		version: 5,
		name:    "create audit events",
		sqlite: []string{
			`CREATE TABLE audit_events (
				id          TEXT   NOT NULL PRIMARY KEY,
				occurred_at BIGINT NOT NULL,
				type        TEXT   NOT NULL,
				actor_id    TEXT   NOT NULL,
				subject_id  TEXT   NOT NULL,
				client_ip   TEXT   NOT NULL,
				request_id  TEXT   NOT NULL,
				detail      TEXT   NOT NULL
			)`,
		},
		postgres: []string{
			`CREATE TABLE audit_events (
				id          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
				occurred_at BIGINT NOT NULL,
				type        TEXT   NOT NULL,
				actor_id    TEXT   NOT NULL,
				subject_id  TEXT   NOT NULL,
				client_ip   TEXT   NOT NULL,
				request_id  TEXT   NOT NULL,
				detail      TEXT   NOT NULL
			)`,
		},
	},
}

// statements returns the DDL of m for the database.
func (m migration) statements(postgres bool) []string {
	switch {
	case postgres && m.postgres != nil:
		return m.postgres
	case !postgres && m.sqlite != nil:
		return m.sqlite
	}
	return m.shared
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	applied_at BIGINT  NOT NULL
)`

// migrationLockKey is the PostgreSQL advisory lock that serialises
// migrations of instances starting together ("userd" in ASCII). SQLite
// needs none: each step's transaction is BEGIN IMMEDIATE.
const migrationLockKey = 0x7573657264

type schemaMigrationRow struct {
	Version       int   `gorm:"column:version;primaryKey"`
	AppliedMicros int64 `gorm:"column:applied_at"`
}

func (schemaMigrationRow) TableName() string { return "schema_migrations" }

// MigrationState is one schema step and whether it has been applied.
type MigrationState struct {
	Version int
	Name    string
	// Applied is false for a pending step.
	Applied bool
	// AppliedAt is when the step was applied; zero when pending.
	AppliedAt time.Time
}

// Migrate applies every pending schema step, each in its own transaction
// together with its row in schema_migrations, so that a step is applied
// completely or not at all. Running it again, or from several instances
// at once, is harmless. It refuses a database that has steps this binary
// does not know: an older binary must not write to a newer schema.
func (db *DB) Migrate(ctx context.Context) error {
	g := db.gorm.WithContext(ctx)
	err := g.Transaction(func(tx *gorm.DB) error {
		if err := db.lockMigrations(tx); err != nil {
			return err
		}
		return tx.Exec(createMigrationsTable).Error
	})
	if err != nil {
		return storeError("migrate: create schema_migrations", err)
	}
	latest := migrations[len(migrations)-1].version
	var newest sql.NullInt64
	if err := g.Model(&schemaMigrationRow{}).Select("MAX(version)").Scan(&newest).Error; err != nil {
		return storeError("migrate: read schema version", err)
	}
	if newest.Valid && newest.Int64 > int64(latest) {
		return fmt.Errorf("migrate: database schema version %d is newer than this binary's %d", newest.Int64, latest)
	}
	for _, m := range migrations {
		err := g.Transaction(func(tx *gorm.DB) error {
			if err := db.lockMigrations(tx); err != nil {
				return err
			}
			// Checked inside the transaction, after the lock: another
			// instance may have applied the step since we looked.
			var n int64
			if err := tx.Model(&schemaMigrationRow{}).Where("version = ?", m.version).Count(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			for _, stmt := range m.statements(db.postgres) {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			row := schemaMigrationRow{Version: m.version, AppliedMicros: toMicros(time.Now())}
			return tx.Create(&row).Error
		})
		if err != nil {
			return storeError(fmt.Sprintf("migrate: step %d (%s)", m.version, m.name), err)
		}
	}
	return nil
}

func (db *DB) lockMigrations(tx *gorm.DB) error {
	if !db.postgres {
		return nil
	}
	return tx.Exec("SELECT pg_advisory_xact_lock(?)", migrationLockKey).Error
}

// MigrationStatus lists every step this binary knows, applied or pending,
// in order, followed by any applied step it does not know (Name empty).
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	g := db.gorm.WithContext(ctx)
	var rows []schemaMigrationRow
	if g.Migrator().HasTable(&schemaMigrationRow{}) {
		if err := g.Order("version").Find(&rows).Error; err != nil {
			return nil, storeError("migration status", err)
		}
	} else if err := db.Ping(ctx); err != nil {
		// HasTable swallows errors; tell "no table" from "no database".
		return nil, err
	}
	applied := make(map[int]int64, len(rows))
	for _, r := range rows {
		applied[r.Version] = r.AppliedMicros
	}
	out := make([]MigrationState, 0, len(migrations))
	for _, m := range migrations {
		s := MigrationState{Version: m.version, Name: m.name}
		if us, ok := applied[m.version]; ok {
			s.Applied, s.AppliedAt = true, fromMicros(us)
			delete(applied, m.version)
		}
		out = append(out, s)
	}
	for _, r := range rows {
		if _, unknown := applied[r.Version]; unknown {
			out = append(out, MigrationState{Version: r.Version, Applied: true, AppliedAt: fromMicros(r.AppliedMicros)})
		}
	}
	return out, nil
}
