package gormstore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// The SQLite specifics of opening a database: its file, its DSN and
// pragmas, its read-only pool.

// prepareSQLiteFile creates the SQLite database file, empty and with mode
// 0600, before the driver opens it: the driver would create it 0644
// (SQLite's default, less the umask), readable by every user of the
// machine, with the password hashes and the sealed keys in it. SQLite
// gives the -wal and -shm files it makes the mode of the database file, so
// they are 0600 too. O_EXCL: of several processes opening one new file,
// one creates it. An existing file is not changed; if other users may read
// or write it, a warning names it and its mode.
func (db *DB) prepareSQLiteFile() error {
	if db.file == "" {
		return nil
	}
	if !db.readOnly {
		f, err := os.OpenFile(db.file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G703: the operator's USERD_DB_DSN names the file the driver opens anyway
		if err == nil {
			return f.Close()
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create the database file: %w", err)
		}
	}
	info, err := os.Stat(db.file) //nolint:gosec // G703: as above
	if err != nil {
		// The driver reports what is wrong with the file.
		return nil
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 && db.opts.Logger != nil {
		db.opts.Logger.Warn("the SQLite database file may be read by other users than its owner: it holds password hashes "+
			"and sealed keys; run chmod 600 on it and on its -wal and -shm files",
			slog.String("path", db.file), slog.String("mode", fmt.Sprintf("%#o", mode)))
	}
	return nil
}

// SQLiteFile returns the database file that a SQLite DSN names (a path,
// or a file: URI), and false for an in-memory database, which has none.
func SQLiteFile(dsn string) (path string, ok bool) {
	if sqliteInMemory(dsn) {
		return "", false
	}
	path, _, _ = strings.Cut(dsn, "?")
	if rest, uri := strings.CutPrefix(path, "file:"); uri {
		// SQLite's URI: file:relative, file:/absolute, or
		// file://[localhost]/absolute, percent-encoded.
		if strings.HasPrefix(rest, "//") {
			u, err := url.Parse(path)
			if err != nil || (u.Host != "" && u.Host != "localhost") {
				return "", false
			}
			rest = u.EscapedPath()
		}
		unescaped, err := url.PathUnescape(rest)
		if err != nil {
			return "", false
		}
		path = unescaped
	}
	return path, path != ""
}

// sqliteReadOnly reports whether a SQLite DSN opens its file read-only
// (mode=ro), so that a missing file must not be created.
func sqliteReadOnly(dsn string) bool {
	_, query, _ := strings.Cut(dsn, "?")
	params, err := url.ParseQuery(query)
	return err == nil && params.Get("mode") == "ro"
}

// openSQLiteReaders opens the read-only pool of a SQLite file, base being
// its DSN with the pragmas added: query_only connections with deferred
// transactions, which in WAL mode read the last committed state without
// taking the write lock.
func openSQLiteReaders(base string) (*gorm.DB, error) {
	sep := "&"
	if !strings.Contains(base, "?") {
		sep = "?"
	}
	readDSN := strings.Replace(base, "_txlock=immediate", "_txlock=deferred", 1) + sep + "_query_only=1"
	r, err := gorm.Open(sqlite.Open(readDSN), gormConfig())
	if err != nil {
		return nil, storeError("open sqlite readers", err)
	}
	sqlDB, err := r.DB()
	if err != nil {
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	sqlDB.SetMaxOpenConns(sqliteReaders)
	sqlDB.SetMaxIdleConns(sqliteReaders)
	sqlDB.SetConnMaxLifetime(0)
	return r, nil
}

// sqliteInMemory reports whether dsn names an in-memory database, which
// exists once per connection: it keeps its single connection for all.
func sqliteInMemory(dsn string) bool {
	return strings.Contains(dsn, ":memory:") || strings.Contains(dsn, "mode=memory")
}

// sqlitePragmas are the mattn/go-sqlite3 DSN parameters userd needs, with
// the other spellings the driver accepts for each. A parameter the DSN
// already sets, under any spelling, is left alone.
var sqlitePragmas = []struct {
	key, value string
	aliases    []string
}{
	// WAL lets readers proceed while a writer commits.
	{"_journal_mode", "WAL", []string{"_journal"}},
	// Wait for another process's write lock instead of failing at once.
	{"_busy_timeout", "5000", []string{"_timeout"}},
	// Deleting a user must cascade to its refresh tokens.
	{"_foreign_keys", "1", []string{"_fk"}},
	// In WAL mode NORMAL syncs at checkpoints, not at every commit: an
	// acknowledged write survives a crash of the process (tested by
	// test/faults with SIGKILL), and the last commits before a power cut or
	// kernel crash may be lost. It nearly doubles write throughput
	// (docs/performance.md, "The SQL store"). Add _synchronous=FULL to
	// USERD_DB_DSN for power-loss durability.
	{"_synchronous", "NORMAL", []string{"_sync"}},
	// Take the write lock at BEGIN: a transaction that reads and then
	// writes (Update, Rotate) can then neither lose an update nor fail
	// with SQLITE_BUSY halfway through.
	{"_txlock", "immediate", nil},
}

// sqliteDSN adds the pragmas of sqlitePragmas that dsn does not set. It
// refuses a DSN that turns foreign keys off, since user deletion relies on
// them.
func sqliteDSN(dsn string) (string, error) {
	if dsn == "" {
		return "", errors.New("open sqlite database: empty DSN")
	}
	_, query, _ := strings.Cut(dsn, "?")
	params, err := url.ParseQuery(query)
	if err != nil {
		return "", fmt.Errorf("open sqlite database: DSN parameters: %w", err)
	}
	var add []string
	for _, p := range sqlitePragmas {
		set := false
		for _, k := range append([]string{p.key}, p.aliases...) {
			if v, ok := params[k]; ok {
				set = true
				if p.key == "_foreign_keys" && !isTrue(v[len(v)-1]) {
					return "", errors.New("open sqlite database: foreign keys must stay on (user deletion cascades through them)")
				}
			}
		}
		if !set {
			add = append(add, p.key+"="+p.value)
		}
	}
	if len(add) == 0 {
		return dsn, nil
	}
	sep := "?"
	if query != "" {
		sep = "&"
	} else if strings.HasSuffix(dsn, "?") {
		sep = ""
	}
	return dsn + sep + strings.Join(add, "&"), nil
}

// isTrue follows mattn/go-sqlite3's reading of boolean parameters.
func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on":
		return true
	}
	return false
}
