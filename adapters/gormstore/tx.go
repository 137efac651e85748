package gormstore

import (
	"context"
	"errors"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/userd/userd/ports"
)

var _ ports.Transactor = (*DB)(nil)

// txKey is the context key of the transaction WithinTx runs.
type txKey struct{}

// dbTx is a transaction of WithinTx: the DB it belongs to, and its GORM
// handle until done.
type dbTx struct {
	db   *DB
	tx   *gorm.DB
	done atomic.Bool
}

// WithinTx implements ports.Transactor: every method of the package's
// stores made from db that is called with the context fn receives runs in
// the transaction. A store method whose work must be all or nothing, or
// that can fail for a reason its caller reports and goes on after (a taken
// email, an unknown user), runs in a savepoint of it, so that its failure
// undoes its own writes only and leaves the transaction usable: on
// PostgreSQL a failed statement would otherwise abort the whole
// transaction. A panic in fn rolls back and goes on up.
//
// fn must call the stores from its own goroutine only, one call at a time:
// the transaction is one connection. On SQLite, it holds the one writer
// connection until it ends, so a store called inside fn with another
// context would wait for it, until that context ends.
func (db *DB) WithinTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if db.txOf(ctx) != nil {
		return fn(ctx)
	}
	var fnErr error
	err := db.transactions.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		t := &dbTx{db: db, tx: tx}
		// A context kept past the end, by a goroutine fn started, makes
		// the stores run on their own again, as outside.
		defer t.done.Store(true)
		fnErr = fn(context.WithValue(ctx, txKey{}, t))
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return storeError("transaction", err)
}

// txOf returns the running transaction of db that ctx is inside, or nil.
func (db *DB) txOf(ctx context.Context) *dbTx {
	t, ok := ctx.Value(txKey{}).(*dbTx)
	if !ok || t.db != db || t.done.Load() {
		return nil
	}
	return t
}

// writer returns the handle a write runs on: ctx's transaction, or the
// writer pool.
func (db *DB) writer(ctx context.Context) *gorm.DB {
	if t := db.txOf(ctx); t != nil {
		return t.tx.WithContext(ctx)
	}
	return db.gorm.WithContext(ctx)
}

// reader returns the handle a read runs on: ctx's transaction, whose
// writes the read must see (and which, on SQLite, holds the one writer
// connection), or the read pool.
func (db *DB) reader(ctx context.Context) *gorm.DB {
	if t := db.txOf(ctx); t != nil {
		return t.tx.WithContext(ctx)
	}
	return db.read.WithContext(ctx)
}

// transaction runs fn in a transaction of its own, or inside ctx's
// transaction in a savepoint: fn's writes are kept all or none either way.
//
// On MySQL a transaction of its own that InnoDB rolls back as the victim
// of a deadlock is run again, up to mysqlDeadlockRetries times in all:
// InnoDB locks more than PostgreSQL does (the index entries next to a row
// inserted or deleted, a foreign key's parent row), so transactions that
// PostgreSQL would have run side by side may deadlock, and the second try
// finds the first committed. fn must therefore start from nothing each
// time. Inside ctx's transaction
// the deadlock goes up: InnoDB has rolled back the whole of it, which
// only its owner can run again.
func (db *DB) transaction(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if t := db.txOf(ctx); t != nil {
		return savepoint(ctx, t.tx, fn)
	}
	for attempt := 1; ; attempt++ {
		err := db.transactions.WithContext(ctx).Transaction(fn)
		if err == nil || db.dialect != dialectMySQL || attempt >= mysqlDeadlockRetries || !mysqlDeadlocked(err) {
			return err
		}
	}
}

// mysqlDeadlockRetries is how many times transaction runs a transaction
// that deadlocks on MySQL.
const mysqlDeadlockRetries = 3

// statement runs fn, a single write whose failure the caller reports and
// goes on after (a unique or foreign key violated): on the writer pool
// with no transaction, since one statement is atomic; inside ctx's
// transaction, in a savepoint, so that the failure does not abort it.
func (db *DB) statement(ctx context.Context, fn func(g *gorm.DB) error) error {
	if t := db.txOf(ctx); t != nil {
		return savepoint(ctx, t.tx, fn)
	}
	return fn(db.gorm.WithContext(ctx))
}

// savepointName is the one name of the package's savepoints. They do not
// nest (a store method runs no other inside its savepoint). GORM's own
// nested Transaction is not used: it names each savepoint at random, and
// a cache of statements (pgx's on PostgreSQL) would prepare and keep every
// one of them, never used again.
const savepointName = "userd_store"

// savepoint runs fn in a savepoint of tx: released when fn succeeds,
// rolled back to (and released) when it fails or panics, so that the
// transaction goes on without fn's writes.
func savepoint(ctx context.Context, tx *gorm.DB, fn func(tx *gorm.DB) error) (err error) {
	tx = tx.WithContext(ctx)
	if err := tx.Exec("SAVEPOINT " + savepointName).Error; err != nil {
		return err
	}
	panicked := true
	defer func() {
		if !panicked && err == nil {
			return
		}
		// Even when ctx has ended: the transaction, which may go on with
		// another context, must not keep fn's writes.
		undo := tx.WithContext(context.WithoutCancel(ctx))
		undoErr := undo.Exec("ROLLBACK TO SAVEPOINT " + savepointName).Error
		if undoErr == nil {
			undoErr = undo.Exec("RELEASE SAVEPOINT " + savepointName).Error
		}
		if undoErr != nil && !panicked {
			// The transaction is broken; its commit will fail too.
			err = errors.Join(err, undoErr)
		}
	}()
	err = fn(tx)
	panicked = false
	if err != nil {
		return err
	}
	return tx.Exec("RELEASE SAVEPOINT " + savepointName).Error
}
