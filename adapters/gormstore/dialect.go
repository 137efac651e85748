package gormstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// dialect is the SQL database a DB talks to. The SQL the databases share
// is written once, in the stores. Where they differ only in how a
// statement is written, the forms live in one helper, here or in
// returning.go (the writes that answer their rows), and a store calls the
// helper without naming the dialect. A store branches on the dialect
// itself only where the steps differ, not just their SQL, and says so
// there: the rotation of a refresh token, the lock-out's reservation and
// a pending TOTP factor on MySQL, the outbox claim's lock, the last-admin
// lock, the named locks, the session endings; and opening and migrating
// a database (db.go, migrate.go), which are the dialects' own business.
type dialect uint8

const (
	dialectSQLite dialect = iota
	dialectPostgres
	dialectMySQL
)

// rowLocks reports whether a read that decides a write must lock its rows
// (SELECT … FOR UPDATE): on PostgreSQL and MySQL, where transactions run
// side by side; SQLite's BEGIN IMMEDIATE has serialised them already.
func (d dialect) rowLocks() bool { return d != dialectSQLite }

// forUpdate returns read, a read that decides a write in a transaction,
// locking the rows it reads until the transaction ends where rowLocks
// says it must.
func (d dialect) forUpdate(read *gorm.DB) *gorm.DB {
	if !d.rowLocks() {
		return read
	}
	return read.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
}

// returning reports whether an UPDATE or a DELETE can answer the rows it
// writes (RETURNING): SQLite (3.35+) and PostgreSQL can; MySQL cannot
// (MariaDB has DELETE … RETURNING, MySQL 8 has neither), and the helpers
// of returning.go take two statements in a transaction there.
func (d dialect) returning() bool { return d != dialectMySQL }

// param is the placeholder of the n-th argument (from 1) of a statement
// run through database/sql rather than GORM, which writes PostgreSQL's
// itself: $n on PostgreSQL, whose driver (pgx) takes no ?, and ?
// elsewhere.
func (d dialect) param(n int) string {
	if d == dialectPostgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// instr is the SQL function that finds a string in another, answering
// its position from 1, or 0 when it is absent: instr on SQLite and MySQL,
// strpos on PostgreSQL. Unlike LIKE, which ignores case on SQLite, it
// minds case on all three (on MySQL through the binary collation).
func (d dialect) instr() string {
	if d == dialectPostgres {
		return "strpos"
	}
	return "instr"
}

// deleteSomeSQL is a DELETE of at most a limit of the rows of table that
// where (with its arguments) finds, the limit its last argument: one
// statement, its own transaction, so that a batch holds SQLite's one
// writer only briefly. Neither SQLite nor PostgreSQL has DELETE … LIMIT
// (SQLite only when built for it): they delete the rows a limited SELECT
// picks, by the rowid on SQLite (every table of ours has one, and it is
// the table's own order) and by pk, the primary key, on PostgreSQL. MySQL
// refuses a LIMIT in an IN subquery and has DELETE … LIMIT instead. Not
// ORDER BY the key there: MariaDB would then read every stale row by the
// index of the condition and sort them all, for each batch, where without
// it the index range stops at the limit (docs/performance.md, "The SQL
// store"). Which rows a batch takes does not matter; a statement-based
// binlog would log such a DELETE as rows (MIXED, MariaDB's default) or
// warn (STATEMENT). The names must be constants of the package, never
// input.
func (d dialect) deleteSomeSQL(table, pk, where string) string {
	switch d {
	case dialectMySQL:
		return fmt.Sprintf("DELETE FROM %s WHERE %s LIMIT ?", table, where)
	case dialectPostgres:
		return fmt.Sprintf("DELETE FROM %[1]s WHERE %[2]s IN (SELECT %[2]s FROM %[1]s WHERE %[3]s LIMIT ?)", table, pk, where)
	}
	return fmt.Sprintf("DELETE FROM %[1]s WHERE rowid IN (SELECT rowid FROM %[1]s WHERE %[2]s LIMIT ?)", table, where)
}

// advisoryKey is the 64-bit key of a PostgreSQL advisory lock named $1
// (on a bare connection) in the current schema: deployments in other
// schemas of the database do not wait for each other.
const advisoryKey = `('x' || left(md5('userd lock ' || $1::text || ' ' || current_schema()), 16))::bit(64)::bigint`

// trySessionLock takes the named lock of the database server, held by
// conn's session until unlockSession or the session's end, without
// waiting; false when another session holds it: an advisory lock on
// PostgreSQL (advisoryKey), a named lock (GET_LOCK) on MySQL. SQLite has
// no sessions to hold one.
func (d dialect) trySessionLock(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	if d == dialectMySQL {
		return mysqlTryLock(ctx, conn, "lock "+name, 0)
	}
	var ok bool
	err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock("+advisoryKey+")", name).Scan(&ok)
	return ok, err
}

// unlockSession releases the lock of trySessionLock; false when conn's
// session did not hold it.
func (d dialect) unlockSession(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	if d == dialectMySQL {
		return mysqlUnlock(ctx, conn, "lock "+name)
	}
	var unlocked bool
	err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock("+advisoryKey+")", name).Scan(&unlocked)
	return unlocked, err
}
