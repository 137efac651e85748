package gormstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// hotStatement is the prepared statement of a read made on nearly every
// request (or of a refresh's rotation), run through database/sql rather
// than GORM: for a signed-in request's account lookup, GORM's statement
// building, callbacks and reflective scan cost about as much CPU as
// SQLite's own work, and about half of the lookup's allocations
// (docs/performance.md, "The SQL store"). On SQLite and MySQL it is
// prepared on the pool it runs on (the read pool for reads) on first use
// (database/sql prepares it again on each connection that runs it) and
// closed with the pool; on PostgreSQL pgx runs it itself (runOnPgx).
// The query must be a constant with parameters only: no value is ever
// put into its text.
type hotStatement struct {
	query string
	// writer is true for a statement that writes, which runs on the
	// writer pool; a read runs on the read pool.
	writer bool
	// stmt is read without the lock once prepared: the requests of a
	// loaded server would otherwise queue on it.
	stmt atomic.Pointer[sql.Stmt]
	mu   sync.Mutex // held to prepare and to close
}

// get returns the statement, prepared on pool the first time; a failed
// preparation is tried again on the next call.
func (h *hotStatement) get(ctx context.Context, pool *sql.DB) (*sql.Stmt, error) {
	if stmt := h.stmt.Load(); stmt != nil {
		return stmt, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if stmt := h.stmt.Load(); stmt != nil {
		return stmt, nil
	}
	stmt, err := pool.PrepareContext(ctx, h.query)
	if err != nil {
		return nil, err
	}
	h.stmt.Store(stmt)
	return stmt, nil
}

// close closes the statement, if prepared; the pool is closed after it.
func (h *hotStatement) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if stmt := h.stmt.Swap(nil); stmt != nil {
		_ = stmt.Close() // the pool's Close that follows reports what matters
	}
}

// queryRow runs h (outside any transaction) with args and scans its one
// row into targets, in a span of its own when traces are on.
func (db *DB) queryRow(ctx context.Context, h *hotStatement, targets []any, args ...any) error {
	if db.dialect == dialectPostgres {
		return db.runOnPgx(ctx, h, func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, h.query, args...).Scan(targets...)
		})
	}
	return db.runPrepared(ctx, h, func(ctx context.Context, stmt *sql.Stmt) error {
		return stmt.QueryRowContext(ctx, args...).Scan(targets...)
	})
}

// execPrepared runs h (outside any transaction) with args and returns the
// rows it affected, in a span of its own when traces are on.
func (db *DB) execPrepared(ctx context.Context, h *hotStatement, args ...any) (affected int64, err error) {
	if db.dialect == dialectPostgres {
		err = db.runOnPgx(ctx, h, func(ctx context.Context, conn *pgx.Conn) error {
			tag, err := conn.Exec(ctx, h.query, args...)
			affected = tag.RowsAffected()
			return err
		})
		return affected, err
	}
	err = db.runPrepared(ctx, h, func(ctx context.Context, stmt *sql.Stmt) error {
		res, err := stmt.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		affected, err = res.RowsAffected()
		return err
	})
	return affected, err
}

// runOnPgx runs h on PostgreSQL by pgx itself, on a connection of its
// pool, in a span. database/sql's rows cost a refresh's rotation (20
// columns) about 60 allocations, most of them pgx's stdlib building a
// scan function for each column of each result (initValueFuncs), and
// database/sql's statement and rows about 8 % of userd's CPU a refresh
// over pgx's own (docs/performance.md, "Speed, eighth pass"). pgx
// prepares the query on each connection on first use and keeps it in the
// connection's statement cache, as the *sql.Stmt did (or does what the
// DSN's default_query_exec_mode asks, for a pooler that cannot keep
// prepared statements). Its errors are the ones database/sql passed on:
// *pgconn.PgError, and pgx.ErrNoRows, which is sql.ErrNoRows.
func (db *DB) runOnPgx(ctx context.Context, h *hotStatement, run func(context.Context, *pgx.Conn) error) (err error) {
	ctx, span := db.tracer.start(ctx, h.query)
	defer func() { finish(span, err) }()
	return db.onPgx(ctx, h, run)
}

// onPgx is runOnPgx without the span, for a caller that has its own.
func (db *DB) onPgx(ctx context.Context, h *hotStatement, run func(context.Context, *pgx.Conn) error) error {
	pool, err := db.poolOf(h)
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }() // returns it to the pool
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres connection of type %T, not pgx's", driverConn)
		}
		return run(ctx, c.Conn())
	})
}

// runPrepared runs h, prepared on its pool, by run, in a span.
func (db *DB) runPrepared(ctx context.Context, h *hotStatement, run func(context.Context, *sql.Stmt) error) (err error) {
	ctx, span := db.tracer.start(ctx, h.query)
	defer func() { finish(span, err) }()
	pool, err := db.poolOf(h)
	if err != nil {
		return err
	}
	stmt, err := h.get(ctx, pool)
	if err != nil {
		return err
	}
	return run(ctx, stmt)
}

// poolOf is the pool h runs on: the writer's for a statement that
// writes, the read pool for a read.
func (db *DB) poolOf(h *hotStatement) (*sql.DB, error) {
	if h.writer {
		return db.gorm.DB()
	}
	return db.read.DB()
}
