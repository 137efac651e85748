// Package gormstore implements the storage ports with GORM on SQLite,
// PostgreSQL and MySQL/MariaDB.
//
// The schema is created by numbered migrations (see Migrate), never by
// GORM's AutoMigrate, so that every deployment runs the same reviewed DDL.
// Times are stored as BIGINT Unix microseconds in UTC: it avoids the time
// zone and text-format pitfalls of SQLite and makes comparisons plain
// integer comparisons on both databases. Row structs and their converters
// (toDomainX, fromDomainX) are the only place GORM tags appear; no GORM
// type or error leaves the package.
//
// Concurrency relies on the databases, not on process-local locks, so that
// several instances can share one database: SQLite runs every transaction
// as BEGIN IMMEDIATE, which serialises writers across processes; PostgreSQL
// and MySQL take row locks where a read decides a write (on PostgreSQL an
// advisory lock for the last-admin rule; FOR UPDATE SKIP LOCKED for outbox
// claims on both).
//
// DB is also the ports.Transactor: every store method called with the
// context of its WithinTx runs in that transaction (see tx.go).
package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel/trace"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Drivers accepted by New and Open.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql"
)

// Pool defaults for PostgreSQL and MySQL, used where Options leaves a field zero.
// Idle equals open: with fewer idle slots than open connections, a busy
// node closes and reopens connections all the time, each a new server
// session, which costs the database CPU and the reads their latency
// (docs/performance.md, "The SQL store").
const (
	DefaultMaxOpenConns    = 20
	DefaultMaxIdleConns    = 20
	DefaultConnMaxLifetime = 30 * time.Minute
)

// Options tunes the connection pool. They apply to PostgreSQL and MySQL:
// SQLite always uses a single connection.
type Options struct {
	// MaxOpenConns caps open connections; 0 means DefaultMaxOpenConns.
	MaxOpenConns int
	// MaxIdleConns caps idle connections; 0 means DefaultMaxIdleConns (but
	// never more than MaxOpenConns).
	MaxIdleConns int
	// ConnMaxLifetime recycles connections after this long, so that a
	// failover or a server-side restart is picked up; 0 means
	// DefaultConnMaxLifetime.
	ConnMaxLifetime time.Duration
	// Logger receives Open's warning about a SQLite file readable by other
	// users; nil discards it.
	Logger *slog.Logger
	// TracerProvider, when set, makes a span of each statement run
	// within a trace (tracing.go); nil traces nothing.
	TracerProvider trace.TracerProvider
}

// DB is a database with the userd schema (after Migrate). New makes one
// without touching the database; Open connects it. It is safe for
// concurrent use once open, and implements ports.HealthChecker and
// ports.Transactor. The
// repositories made from a DB use it only after Open: before, their
// methods would dereference a nil pool.
type DB struct {
	driver string
	// dsn is the DSN to connect with: for SQLite, with the pragmas of
	// sqlitePragmas added. It may hold a password: never put it in an error.
	dsn  string
	opts Options
	// gorm is the writer: every write goes through it. On SQLite it is a
	// single connection. Nil until Open.
	gorm *gorm.DB
	// transactions is the writer's pool without GORM's prepared-statement
	// cache: every transaction begins on it (see gormConfig).
	transactions *gorm.DB
	// read serves single-statement reads. On SQLite it is a separate pool
	// of read-only connections, so that reads neither queue behind the one
	// writer nor block it (WAL); on PostgreSQL and MySQL it is the same
	// pool as gorm.
	read    *gorm.DB
	dialect dialect
	// mysql is the parsed DSN with the settings mysqlConfig adds; nil on
	// the other databases.
	mysql *mysql.Config
	// userByID is UserRepository.ByID outside a transaction;
	// tokenByHash PersonalTokenStore.TokenByHash; refreshLookup
	// RefreshTokenStore.Lookup; rotation and rotateOwn, on PostgreSQL,
	// RefreshTokenStore.Rotate and RotateOwn, on the writer pool.
	userByID, tokenByHash, refreshLookup, rotation, rotateOwn hotStatement
	// rotations batches rotateOwn's runs (rotationBatches).
	rotations *rotationBatches
	// stmts are the writer's statements prepared for transactions that
	// run outside GORM (the rotation of a refresh token on SQLite).
	stmts *stmtCache
	// file is the SQLite database file, "" for the other databases and for
	// an in-memory database.
	file string
	// readOnly is true for a SQLite DSN with mode=ro, whose file Open must
	// not create.
	readOnly bool
	// tracer is nil when traces are off.
	tracer *dbTracer
}

// sqliteReaders is the size of SQLite's read-only pool. Reads are short
// and CPU-bound; a few more than the cores keep every core busy while one
// connection waits on the disk.
const sqliteReaders = 4

var _ ports.HealthChecker = (*DB)(nil)

// New checks its arguments and returns a DB that is not connected yet: it
// does no I/O, so that it can be built before the application starts and
// opened when it does. driver is DriverSQLite (dsn a file path or a file:
// URI), DriverPostgres (dsn a URL or key=value string, parsed by Open) or
// DriverMySQL (dsn user:password@tcp(host:port)/database?param=value, the
// go-sql-driver form).
func New(driver, dsn string, opts Options) (*DB, error) {
	db := &DB{driver: driver, dsn: dsn, opts: opts}
	switch driver {
	case DriverSQLite:
		full, err := sqliteDSN(dsn)
		if err != nil {
			return nil, err
		}
		db.dsn = full
		db.file, _ = SQLiteFile(dsn)
		db.readOnly = sqliteReadOnly(dsn)
	case DriverPostgres:
		db.dialect = dialectPostgres
	case DriverMySQL:
		cfg, err := mysqlConfig(dsn)
		if err != nil {
			return nil, err
		}
		db.dialect, db.mysql = dialectMySQL, cfg
	default:
		return nil, fmt.Errorf("open database: unknown driver %q (want %q, %q or %q)", driver, DriverSQLite, DriverPostgres, DriverMySQL)
	}
	db.tracer = newDBTracer(opts.TracerProvider, driver)
	db.userByID.query = userByIDQuery(db.dialect)
	db.tokenByHash.query = tokenByHashQuery(db.dialect)
	db.refreshLookup.query = refreshLookupQuery(db.dialect)
	db.rotation.query, db.rotation.writer = rotatePostgresSQL, true
	db.rotateOwn.query, db.rotateOwn.writer = rotateOwnPostgresSQL, true
	db.rotations = newRotationBatches(db)
	return db, nil
}

// Open connects to the database: it pings PostgreSQL and MySQL (and
// refuses a MySQL or MariaDB too old for the stores); it creates a SQLite
// file that does not exist, readable by its owner only (0600), and sets
// its pragmas. An existing SQLite file that other users may read is
// logged as a warning, not changed. It does not create the schema: call
// Migrate. A DB opens once; Close releases it.
func (db *DB) Open(ctx context.Context) error {
	op := "open " + db.driver + " database"
	if db.gorm != nil {
		return errors.New(op + ": already open")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := db.prepareSQLiteFile(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	g, err := db.connect(ctx)
	if err != nil {
		// The DSN is left out on purpose: it may hold a password.
		return storeError(op, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if db.dialect != dialectSQLite {
		maxOpen := orDefault(db.opts.MaxOpenConns, DefaultMaxOpenConns)
		sqlDB.SetMaxOpenConns(maxOpen)
		sqlDB.SetMaxIdleConns(min(orDefault(db.opts.MaxIdleConns, DefaultMaxIdleConns), maxOpen))
		sqlDB.SetConnMaxLifetime(orDefault(db.opts.ConnMaxLifetime, DefaultConnMaxLifetime))
	} else {
		// One connection serialises this process's writers, so they never
		// see SQLITE_BUSY from each other; busy_timeout covers other
		// processes. It also keeps a ":memory:" database alive and single.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxLifetime(0)
	}
	// gorm.Open's own ping takes no context; this one gives up with ctx.
	if err := sqlDB.PingContext(ctx); err != nil {
		_ = sqlDB.Close()
		return storeError(op, err)
	}
	transactions, err := db.openTransactions(sqlDB)
	if err != nil {
		_ = sqlDB.Close()
		return storeError(op, err)
	}
	read := g
	if db.dialect == dialectSQLite && !sqliteInMemory(db.dsn) {
		if read, err = openSQLiteReaders(db.dsn); err != nil {
			_ = sqlDB.Close()
			return err
		}
	}
	if err := db.traceGORM(g, transactions, read); err != nil {
		_ = sqlDB.Close()
		return fmt.Errorf("%s: %w", op, err)
	}
	db.gorm, db.transactions, db.read, db.stmts = g, transactions, read, newStmtCache(sqlDB)
	db.stmts.tracer = db.tracer
	return nil
}

// openTransactions returns a GORM handle on pool, the writer's, that does
// not prepare statements: the handle transactions begin on. GORM's
// statement cache holds a read lock while it waits for another caller to
// finish preparing a statement, and needs the write lock to prepare a new
// one; a caller outside any transaction prepares on the pool, which needs
// a connection. A transaction preparing a statement through the cache
// could thus wait for a caller that waits for the connection the
// transaction holds (on SQLite, the only one): a deadlock, which the
// Transactor contract met at once. Without the cache, transactions never
// take its locks. The cost is small: on PostgreSQL pgx caches the
// statements of each connection itself; on MySQL a statement outside the
// cache is sent with its arguments in one round trip, as text (which the
// driver escapes); on SQLite the statements of a
// transaction are parsed again each time (a statement prepared inside a
// transaction was re-prepared by database/sql in every other one anyway).
func (db *DB) openTransactions(pool *sql.DB) (*gorm.DB, error) {
	var dialector gorm.Dialector
	switch db.dialect {
	case dialectPostgres:
		dialector = postgres.New(postgres.Config{Conn: pool})
	case dialectMySQL:
		dialector = gormmysql.New(gormmysql.Config{Conn: pool, SkipInitializeWithVersion: true})
	default:
		dialector = sqlite.New(sqlite.Config{Conn: pool})
	}
	cfg := gormConfig()
	cfg.PrepareStmt = false
	return gorm.Open(dialector, cfg)
}

// sqliteOpenRetry bounds how long Open retries a SQLite connection refused
// as busy: as long as the busy timeout lets a statement wait.
const sqliteOpenRetry = 5 * time.Second

// connect opens the GORM handle; on SQLite that makes the first
// connection (the dialect reads the library's version), which sets the
// pragmas. Switching a brand-new file to WAL needs an exclusive lock for
// which SQLite may answer SQLITE_BUSY at once, without its busy handler:
// two processes opening one new file together (nodes starting, `userd
// migrate` beside `userd serve`) would see "database is locked". Such a
// refusal is retried with a short backoff for up to sqliteOpenRetry.
func (db *DB) connect(ctx context.Context) (*gorm.DB, error) {
	switch db.dialect {
	case dialectPostgres:
		return gorm.Open(postgres.Open(db.dsn), gormConfig())
	case dialectMySQL:
		return db.connectMySQL(ctx)
	}
	deadline := time.Now().Add(sqliteOpenRetry)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		g, err := gorm.Open(sqlite.Open(db.dsn), gormConfig())
		if err == nil || !unavailable(err) || !time.Now().Before(deadline) {
			return g, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Open is New followed by (*DB).Open, for callers that need no start
// phase: tests, tools.
func Open(driver, dsn string, opts Options) (*DB, error) {
	db, err := New(driver, dsn, opts)
	if err != nil {
		return nil, err
	}
	if err := db.Open(context.Background()); err != nil {
		return nil, err
	}
	return db, nil
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		// Maps unique and foreign-key violations to gorm.ErrDuplicatedKey
		// and gorm.ErrForeignKeyViolated on both databases.
		TranslateError: true,
		// SQL with its values would put password hashes in the logs.
		Logger: logger.Discard,
		// Single statements are atomic anyway; the implicit transaction
		// would only cost a round trip (and the SQLite write lock).
		SkipDefaultTransaction: true,
		// Every query shape is reused on every request: preparing each once
		// per connection saves its parse and plan on every later run
		// (docs/performance.md, "The SQL store"). Not in transactions:
		// see openTransactions.
		PrepareStmt: true,
		NowFunc:     func() time.Time { return time.Now().UTC() },
		// Open pings with its context instead.
		DisableAutomaticPing: true,
	}
}

// orDefault returns v, or def when v is zero or negative.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Close closes the connection pools; it does nothing on a DB never opened.
func (db *DB) Close() error {
	if db.gorm == nil {
		return nil
	}
	db.userByID.close()
	db.tokenByHash.close()
	db.refreshLookup.close()
	db.rotation.close()
	db.rotateOwn.close()
	db.stmts.close()
	if db.read != db.gorm {
		if sqlDB, err := db.read.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	if err := sqlDB.Close(); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// Stats returns the statistics of the connection pool (open, in use, idle
// connections, waits), for the metrics; zero values before Open.
func (db *DB) Stats() sql.DBStats {
	if db.gorm == nil {
		return sql.DBStats{}
	}
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return sql.DBStats{}
	}
	return sqlDB.Stats()
}

// Ping implements ports.HealthChecker: any failure to reach the database,
// not opened yet included, is domain.ErrUnavailable.
func (db *DB) Ping(ctx context.Context) error {
	if db.gorm == nil {
		return fmt.Errorf("ping database: %w: not open", domain.ErrUnavailable)
	}
	sqlDB, err := db.gorm.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("ping database: %w: %v", domain.ErrUnavailable, err)
	}
	return nil
}
