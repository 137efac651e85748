package gormstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
)

// The MySQL/MariaDB specifics of opening a database: the settings every
// connection gets, the server check, the named locks.

// mysqlSQLMode is the sql_mode of every connection, whatever the server's
// default: strict, so that a value too long for its column is an error
// rather than cut short; NO_BACKSLASH_ESCAPES, so that string literals
// mean what they mean on the other databases (the prefix search's
// ESCAPE '\'); PIPES_AS_CONCAT, so that || concatenates as there.
const mysqlSQLMode = "'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION,NO_BACKSLASH_ESCAPES,PIPES_AS_CONCAT'"

// mysqlConfig parses a go-sql-driver DSN (user:pass@tcp(host:port)/db?…)
// and sets what the stores rely on, over anything the DSN says:
//   - ClientFoundRows: an UPDATE reports the rows it matched, not only
//     those whose values changed, as on the other databases: the stores
//     tell "not found" by zero rows, and an update that writes the values
//     a row has already is not that;
//   - utf8mb4 with the binary collation for the connection, the charset
//     the tables are made in;
//   - sql_mode (mysqlSQLMode);
//   - InterpolateParams: a statement with arguments that is not one of
//     the pool's prepared statements (those of a transaction, see
//     openTransactions) is sent with its arguments escaped into it, in one
//     round trip, instead of prepared, executed and closed on the server
//     in three: a refresh makes fewer round trips and no prepares
//     (docs/performance.md, "The SQL store"). The driver escapes by the
//     server's rules (it reads NO_BACKSLASH_ESCAPES from the session) and
//     refuses to interpolate in the multibyte charsets where escaping is
//     unsafe; utf8mb4, set here, is not one of them.
//
// The error never repeats the DSN, which may hold a password.
func mysqlConfig(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("open mysql database: the DSN is not of the form user:password@tcp(host:port)/database?param=value")
	}
	if cfg.DBName == "" {
		return nil, errors.New("open mysql database: the DSN names no database (…@tcp(host:port)/database)")
	}
	cfg.ClientFoundRows = true
	cfg.MultiStatements = false
	cfg.InterpolateParams = true
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_bin")); err != nil {
		return nil, fmt.Errorf("open mysql database: %w", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["sql_mode"] = mysqlSQLMode
	return cfg, nil
}

// mysqlMinimum is what the stores need of the server: FOR UPDATE SKIP
// LOCKED (the outbox claims) came with MariaDB 10.6 and MySQL 8.0.1.
var mysqlMinimum = map[bool][2]int{true: {10, 6}, false: {8, 0}}

// mysqlIsolation returns the session variable that sets the isolation
// level on the server that answered version: MariaDB knows it as
// tx_isolation (transaction_isolation only from 11.1), MySQL 8 as
// transaction_isolation (tx_isolation is gone). It refuses a server too
// old for the stores.
func mysqlIsolation(version string) (string, error) {
	mariadb := strings.Contains(strings.ToLower(version), "mariadb")
	var major, minor int
	parts := strings.SplitN(version, ".", 3)
	if len(parts) >= 2 {
		major, _ = strconv.Atoi(parts[0])
		minor, _ = strconv.Atoi(parts[1])
	}
	want := mysqlMinimum[mariadb]
	if major < want[0] || major == want[0] && minor < want[1] {
		name := "MySQL"
		if mariadb {
			name = "MariaDB"
		}
		return "", fmt.Errorf("server version %q: userd needs %s %d.%d or later (FOR UPDATE SKIP LOCKED)", version, name, want[0], want[1])
	}
	if mariadb {
		return "tx_isolation", nil
	}
	return "transaction_isolation", nil
}

// connectMySQL asks the server its version on a connection of its own,
// then opens the pool whose every connection runs READ COMMITTED.
// InnoDB's default, REPEATABLE READ, reads from a snapshot taken at a
// transaction's first read and takes gap locks on the ranges its locking
// reads and updates scan: two transactions that each check a range then
// insert into it deadlock, where PostgreSQL's READ COMMITTED, which the
// stores were written for, lets the second wait and proceed. Under READ
// COMMITTED each statement sees what committed before it, a locking read
// sees the latest committed row, and only the rows found are locked.
func (db *DB) connectMySQL(ctx context.Context) (*gorm.DB, error) {
	probe, err := mysql.NewConnector(db.mysql)
	if err != nil {
		return nil, err
	}
	probeDB := sql.OpenDB(probe)
	var version string
	err = probeDB.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version)
	_ = probeDB.Close()
	if err != nil {
		return nil, err
	}
	variable, err := mysqlIsolation(version)
	if err != nil {
		return nil, err
	}
	cfg := db.mysql.Clone()
	cfg.Params[variable] = "'READ-COMMITTED'"
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return gorm.Open(gormmysql.New(gormmysql.Config{Conn: sql.OpenDB(connector), ServerVersion: version}), gormConfig())
}

// MySQL error numbers that unavailable and the transactions look for.
const (
	mysqlLockWaitTimeout = 1205
	mysqlDeadlock        = 1213
)

// mysqlUnavailable reports whether a server error means that the work may
// succeed if tried again: a deadlock (InnoDB rolled the transaction
// back), a lock waited for too long, too many connections, the server
// shutting down or read-only.
func mysqlUnavailable(err *mysql.MySQLError) bool {
	switch err.Number {
	case mysqlLockWaitTimeout, mysqlDeadlock,
		1040, // too many connections
		1053, // server shutdown in progress
		1290, // --read-only (a replica, a failover under way)
		1836: // read-only mode
		return true
	}
	return false
}

// mysqlDeadlocked reports whether err is InnoDB's deadlock, after which
// the whole transaction has been rolled back and may be run again.
func mysqlDeadlocked(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == mysqlDeadlock
}

// mysqlLockName is the name of a server-wide named lock (GET_LOCK) for
// name in the current database, so that deployments on other databases
// of the server do not wait for each other. Hashed: lock names are at
// most 64 characters.
const mysqlLockName = `SHA1(CONCAT('userd ', ?, ' ', DATABASE()))`

// mysqlTryLock takes the named lock on conn without waiting; false when
// another session holds it.
func mysqlTryLock(ctx context.Context, conn *sql.Conn, name string, wait time.Duration) (bool, error) {
	var got sql.NullInt64
	err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+mysqlLockName+", ?)", name, int(wait/time.Second)).Scan(&got)
	if err != nil {
		return false, err
	}
	// NULL is an error on the server's side (out of memory, the thread
	// killed).
	if !got.Valid {
		return false, errors.New("GET_LOCK answered NULL")
	}
	return got.Int64 == 1, nil
}

// mysqlUnlock releases the named lock that conn holds; false when it
// did not hold it.
func mysqlUnlock(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK("+mysqlLockName+")", name).Scan(&released); err != nil {
		return false, err
	}
	return released.Valid && released.Int64 == 1, nil
}

// mysqlMigrationLocker is goose's session locker on MySQL: a named lock
// (GET_LOCK) held by goose's connection while it migrates, so that nodes
// migrating one database at once take turns; the server releases it if
// the connection dies. MySQL commits DDL at once, outside goose's
// transaction, so without it two nodes could both run a step.
type mysqlMigrationLocker struct {
	// poll is how long each GET_LOCK waits on the server; timeout how
	// long SessionLock waits in all.
	poll, timeout time.Duration
}

const mysqlMigrationLockName = "migrations"

// SessionLock implements goose's lock.SessionLocker.
func (l mysqlMigrationLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	deadline := time.Now().Add(l.timeout)
	for {
		got, err := mysqlTryLock(ctx, conn, mysqlMigrationLockName, l.poll)
		if err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
		if got {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("migration lock: another node held it for %s", l.timeout)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// SessionUnlock implements goose's lock.SessionLocker. A lock that cannot
// be released in a round trip goes with its connection, which is not
// given back to the pool.
func (l mysqlMigrationLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	released, err := mysqlUnlock(ctx, conn, mysqlMigrationLockName)
	if err != nil || !released {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	if err != nil {
		return fmt.Errorf("migration unlock: %w", err)
	}
	return nil
}
