package gormstore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// hotStatement is the prepared statement of a read made on nearly every
// request (or of a refresh's rotation), run through database/sql rather
// than GORM: for a signed-in request's account lookup, GORM's statement
// building, callbacks and reflective scan cost about as much CPU as
// SQLite's own work, and about half of the lookup's allocations
// (docs/performance.md, "The SQL store"). It is prepared on the pool it
// runs on (the read pool for reads) on first use (database/sql prepares
// it again on each connection that runs it) and closed with the pool.
// The query must be a constant with parameters only: no value is ever
// put into its text.
type hotStatement struct {
	query string
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
