package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// querier is what the functions below need of a pool, a connection or a
// transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// prepareVersionTable creates goose's version table if it is missing and
// records in it every step that schema_migrations lists (a database made
// before goose), with the time it was applied, so that goose runs none of
// them again; the steps missing from a partly migrated database are left
// to goose. It works in one transaction: on PostgreSQL under goose's lock
// (locker), on SQLite under the write lock that BEGIN IMMEDIATE takes. A
// database with nothing to do, the usual case, is told without either.
//
// Goose would create its table itself, but outside its lock (HasPending
// takes none), where instances starting together race to create it and,
// on a database made before goose, a racing instance could create it
// empty before this adoption, and then rerun every step.
func (db *DB) prepareVersionTable(ctx context.Context, locker lock.SessionLocker) (err error) {
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return err
	}
	if ready, err := db.versionTableReady(ctx, sqlDB); err != nil || ready {
		return err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close()) }()
	if locker != nil {
		if err := locker.SessionLock(ctx, conn); err != nil {
			return err
		}
		defer func() {
			// Released even when ctx has ended, as goose does.
			err = errors.Join(err, locker.SessionUnlock(context.WithoutCancel(ctx), conn))
		}()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := db.adoptLegacyMigrations(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// versionTableReady reports whether goose's table exists and holds every
// step of schema_migrations, if there is one.
func (db *DB) versionTableReady(ctx context.Context, q querier) (bool, error) {
	exists, err := db.hasTable(ctx, q, versionTable)
	if err != nil || !exists {
		return false, err
	}
	legacy, err := db.legacyMigrations(ctx, q)
	if err != nil {
		return false, err
	}
	if len(legacy) == 0 {
		return true, nil
	}
	recorded, err := db.versionTableMigrations(ctx, q)
	if err != nil {
		return false, err
	}
	for v := range legacy {
		if _, ok := recorded[v]; !ok {
			return false, nil
		}
	}
	return true, nil
}

// adoptLegacyMigrations does the work of prepareVersionTable in tx. The
// table is created with goose's own statements, with the row of version 0
// that goose inserts with it.
func (db *DB) adoptLegacyMigrations(ctx context.Context, tx *sql.Tx) error {
	dialect, _ := db.migrationDialect()
	store, err := database.NewStore(dialect, versionTable)
	if err != nil {
		return err
	}
	exists, err := db.hasTable(ctx, tx, versionTable)
	if err != nil {
		return err
	}
	recorded := map[int64]time.Time{}
	if exists {
		if recorded, err = db.versionTableMigrations(ctx, tx); err != nil {
			return err
		}
	} else {
		if err := store.CreateVersionTable(ctx, tx); err != nil {
			return err
		}
		if err := store.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
			return err
		}
	}
	legacy, err := db.legacyMigrations(ctx, tx)
	if err != nil {
		return err
	}
	// goose's Insert stamps the row with the present time; the step was
	// applied when schema_migrations says. On PostgreSQL tstamp is a
	// timestamp without time zone, which goose fills with now() in the
	// session's time zone: to_timestamp's value is converted the same way.
	// On MySQL, whose tstamp is a DATETIME in the session's time zone,
	// FROM_UNIXTIME converts the same way (no database made before goose
	// is a MySQL one, but the code path is shared).
	insert := `INSERT INTO ` + versionTable + ` (version_id, is_applied, tstamp) VALUES (?, 1, datetime(?, 'unixepoch'))`
	toArg := func(us int64) any { return us / 1_000_000 }
	switch db.dialect {
	case dialectPostgres:
		insert = `INSERT INTO ` + versionTable + ` (version_id, is_applied, tstamp) VALUES ($1, true, to_timestamp($2::bigint / 1000000.0))`
		toArg = func(us int64) any { return us }
	case dialectMySQL:
		insert = `INSERT INTO ` + versionTable + ` (version_id, is_applied, tstamp) VALUES (?, 1, FROM_UNIXTIME(?))`
	}
	for _, v := range slices.Sorted(maps.Keys(legacy)) {
		if _, ok := recorded[v]; ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, insert, v, toArg(legacy[v])); err != nil {
			return err
		}
	}
	return nil
}

// appliedMigrations returns the applied steps and when each was applied:
// from goose's table, or on a database made before goose and not migrated
// since, from schema_migrations.
func (db *DB) appliedMigrations(ctx context.Context) (map[int64]time.Time, error) {
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return nil, err
	}
	exists, err := db.hasTable(ctx, sqlDB, versionTable)
	if err != nil {
		return nil, err
	}
	if exists {
		return db.versionTableMigrations(ctx, sqlDB)
	}
	legacy, err := db.legacyMigrations(ctx, sqlDB)
	if err != nil {
		return nil, err
	}
	applied := make(map[int64]time.Time, len(legacy))
	for v, us := range legacy {
		applied[v] = fromMicros(us)
	}
	return applied, nil
}

// versionTableMigrations reads goose's table, without its version 0. Like
// goose's Provider, it takes every row for an applied step (goose deletes
// the row of a step it rolls back).
func (db *DB) versionTableMigrations(ctx context.Context, q querier) (map[int64]time.Time, error) {
	query := `SELECT version_id, tstamp FROM ` + versionTable + ` WHERE version_id > 0 ORDER BY id`
	switch db.dialect {
	case dialectPostgres:
		// Back from the session's wall-clock time to an instant.
		query = `SELECT version_id, tstamp AT TIME ZONE current_setting('TimeZone') FROM ` + versionTable + ` WHERE version_id > 0 ORDER BY id`
	case dialectMySQL:
		return db.mysqlVersionTableMigrations(ctx, q)
	}
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	// rows.Err, returned below, reports a failure while reading; Close
	// after the last row has nothing to add.
	defer func() { _ = rows.Close() }()
	applied := map[int64]time.Time{}
	for rows.Next() {
		var v int64
		var at sql.NullTime
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		applied[v] = at.Time.UTC()
	}
	return applied, rows.Err()
}

// legacyMigrations reads schema_migrations: step → applied_at in Unix
// microseconds; empty when there is no such table.
func (db *DB) legacyMigrations(ctx context.Context, q querier) (map[int64]int64, error) {
	exists, err := db.hasTable(ctx, q, legacyTable)
	if err != nil || !exists {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT version, applied_at FROM `+legacyTable)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // as in versionTableMigrations
	legacy := map[int64]int64{}
	for rows.Next() {
		var v, us int64
		if err := rows.Scan(&v, &us); err != nil {
			return nil, err
		}
		legacy[v] = us
	}
	return legacy, rows.Err()
}

// mysqlVersionTableMigrations is versionTableMigrations on MySQL, whose
// tstamp is a DATETIME in the session's time zone: UNIX_TIMESTAMP reads
// it back as the instant (and the driver, without parseTime, would not
// scan a DATETIME into a time).
func (db *DB) mysqlVersionTableMigrations(ctx context.Context, q querier) (map[int64]time.Time, error) {
	rows, err := q.QueryContext(ctx, `SELECT version_id, UNIX_TIMESTAMP(tstamp) FROM `+versionTable+` WHERE version_id > 0 ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // as in versionTableMigrations
	applied := map[int64]time.Time{}
	for rows.Next() {
		var v int64
		var at sql.NullInt64
		if err := rows.Scan(&v, &at); err != nil {
			return nil, err
		}
		applied[v] = time.Time{}
		if at.Valid {
			applied[v] = time.Unix(at.Int64, 0).UTC()
		}
	}
	return applied, rows.Err()
}

// hasTable reports whether the table exists where an unqualified name
// creates it: on PostgreSQL in current_schema(), as goose looks for its
// table; on MySQL in the connection's database.
func (db *DB) hasTable(ctx context.Context, q querier, table string) (bool, error) {
	query := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`
	switch db.dialect {
	case dialectPostgres:
		query = `SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1`
	case dialectMySQL:
		query = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`
	}
	var n int
	if err := q.QueryRowContext(ctx, query, table).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}
