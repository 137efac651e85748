package gormstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"
	"gorm.io/gorm"

	"github.com/userd/userd/domain"
)

// Errors for conditions no domain error describes. They mean a caller bug
// (an id stored twice, a token handed to the wrong family), not something a
// client can provoke, so they stay unexported.
var (
	errDuplicate      = errors.New("already exists")
	errFamilyMismatch = errors.New("refresh token does not belong to the family")
	errInvalidAMR     = errors.New("unknown or repeated authentication method")
)

// storeError wraps err, from GORM or a driver, with op as context and
// translates it so that nothing of GORM leaks: a temporary failure becomes
// domain.ErrUnavailable, a context error stays one (the caller gave up, the
// store did not fail), a key violation becomes errDuplicate, and anything
// else keeps only its message. Callers map the errors that mean something
// for their operation (not found, unique email) before calling it.
func storeError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", op, err)
	case unavailable(err):
		return fmt.Errorf("%s: %w: %v", op, domain.ErrUnavailable, err)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("%s: %w", op, errDuplicate)
	default:
		return fmt.Errorf("%s: %v", op, err)
	}
}

// unavailable reports whether err means the database cannot serve right now
// but may soon: locked by another writer, unreachable, restarting,
// overloaded, or a transaction aborted by a conflict worth retrying.
func unavailable(err error) bool {
	var sqliteErr sqlite3.Error
	if errors.As(err, &sqliteErr) {
		return sqliteErr.Code == sqlite3.ErrBusy || sqliteErr.Code == sqlite3.ErrLocked
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "08", // connection exception
			"53", // insufficient resources (too many connections, disk full)
			"57": // operator intervention (shutdown, cannot connect now)
			return true
		}
		return pgErr.Code == "40001" || pgErr.Code == "40P01" // serialization failure, deadlock
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return mysqlUnavailable(myErr)
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, mysql.ErrInvalidConn) ||
		pgconn.Timeout(err)
}
