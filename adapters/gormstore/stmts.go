package gormstore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps statements prepared on the writer pool for the hot
// transactions, which begin on db.transactions and so prepare nothing
// through GORM (see openTransactions): run with tx.StmtContext, a cached
// statement is prepared once per connection and reused by every
// transaction on it. database/sql takes no lock while it waits for a
// connection here: a statement not prepared on the transaction's
// connection yet is prepared on that connection, which the transaction
// holds, so the deadlock of GORM's cache cannot happen.
//
// Preparing a statement the first time does need a connection of the
// pool, so it is done only outside any transaction (prepare): on SQLite a
// caller inside one holds the only connection and would wait for itself.
type stmtCache struct {
	pool  *sql.DB
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// tracer spans each statement within a trace; nil when traces are off.
	tracer *dbTracer
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, stmts: map[string]*sql.Stmt{}}
}

// prepare makes sure the queries are prepared, for exec to find them. The
// caller must hold no transaction of the pool. A query that fails to
// prepare (its table not migrated yet, the database away) is left out:
// exec runs it unprepared, and the next call tries again.
func (c *stmtCache) prepare(ctx context.Context, queries ...string) {
	for _, q := range queries {
		c.mu.Lock()
		_, ok := c.stmts[q]
		c.mu.Unlock()
		if ok {
			continue
		}
		// Not under mu: preparing may wait for a connection.
		stmt, err := c.pool.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, ok := c.stmts[q]; ok {
			_ = stmt.Close() // another caller prepared it meanwhile
		} else {
			c.stmts[q] = stmt
		}
		c.mu.Unlock()
	}
}

// exec runs query on tx: through its cached statement when prepare has
// made one, else unprepared.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (res sql.Result, err error) {
	ctx, span := c.tracer.start(ctx, query)
	defer func() { finish(span, err) }()
	c.mu.Lock()
	stmt := c.stmts[query]
	c.mu.Unlock()
	if stmt == nil {
		return tx.ExecContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
}

// close closes the cached statements; the pool is closed after it.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, stmt := range c.stmts {
		_ = stmt.Close() // the pool's Close that follows reports what matters
		delete(c.stmts, q)
	}
}
