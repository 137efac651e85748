package gormstore

import (
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/userd/userd/test/userdproc"
)

// legacySteps are the steps of schema_migrations, before goose. Their
// goose files must keep these versions and names: a database made then is
// adopted by version.
var legacySteps = []struct {
	version int
	name    string
}{
	{1, "create users"},
	{2, "create refresh token families and tokens"},
	{3, "create login attempts"},
	{4, "create keys"},
	{5, "create audit events"},
}

// migrationFileNames returns the file names of a dialect's migrations.
func migrationFileNames(t testing.TB, dir string) []string {
	t.Helper()
	names, err := fs.Glob(migrationFiles, path.Join("migrations", dir, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = path.Base(n)
	}
	return names
}

// TestMigrationFiles checks the rules of migrations/README.md: every
// dialect has the same steps, numbered from 1 without gaps, each file with
// an up section; the first ones are the steps of schema_migrations.
func TestMigrationFiles(t *testing.T) {
	dirs, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	want := migrationFileNames(t, "sqlite")
	if len(want) < len(legacySteps) {
		t.Fatalf("sqlite has %d migrations, want at least the %d legacy steps", len(want), len(legacySteps))
	}
	pattern := regexp.MustCompile(`^(\d{5})_[a-z0-9]+(_[a-z0-9]+)*\.sql$`)
	for i, name := range want {
		m := pattern.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("sqlite/%s: name is not NNNNN_words_in_snake_case.sql", name)
			continue
		}
		if m[1] != fmt.Sprintf("%05d", i+1) {
			t.Errorf("sqlite/%s: version %s, want %05d (numbered from 1 without gaps)", name, m[1], i+1)
		}
	}
	for i, s := range legacySteps {
		if got := migrationName(want[i]); got != s.name {
			t.Errorf("step %d is %q, want %q, its name in schema_migrations", s.version, got, s.name)
		}
	}
	for _, d := range dirs {
		got := migrationFileNames(t, d.Name())
		if !slices.Equal(got, want) {
			t.Errorf("migrations/%s has %v, want the steps of migrations/sqlite, %v", d.Name(), got, want)
		}
		for _, name := range got {
			body, err := fs.ReadFile(migrationFiles, path.Join("migrations", d.Name(), name))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(body), "-- +goose Up\n") {
				t.Errorf("migrations/%s/%s does not start with -- +goose Up", d.Name(), name)
			}
		}
	}
	if len(dirs) < 2 {
		t.Errorf("migrations has %d dialects, want sqlite and postgres at least", len(dirs))
	}
}

func TestMigrate(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			ctx := t.Context()
			db := b.open(t) // migrated once already
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("second Migrate: %v", err)
			}
			files := migrationFileNames(t, "sqlite")
			status, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatalf("MigrationStatus: %v", err)
			}
			if len(status) != len(files) {
				t.Fatalf("MigrationStatus lists %d steps, want %d", len(status), len(files))
			}
			for i, s := range status {
				if s.Version != i+1 || s.Name != migrationName(files[i]) || !s.Applied || s.AppliedAt.IsZero() {
					t.Errorf("step %d = %+v, want version %d %q applied", i, s, i+1, migrationName(files[i]))
				}
			}
			checkVersionTable(t, db, len(files))
			if ok, err := db.hasTable(ctx, sqlDB(t, db), legacyTable); err != nil || ok {
				t.Errorf("a new database has %s (%v, %v): goose's table replaces it", legacyTable, ok, err)
			}

			// A database from a newer binary is refused.
			if err := db.gorm.Exec("INSERT INTO "+versionTable+" (version_id, is_applied) VALUES (?, ?)", 9999, true).Error; err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "newer") {
				t.Errorf("Migrate(newer schema) error = %v, want a refusal", err)
			}
			status, err = db.MigrationStatus(ctx)
			if err != nil {
				t.Fatalf("MigrationStatus: %v", err)
			}
			if last := status[len(status)-1]; last.Version != 9999 || !last.Applied || last.Name != "" {
				t.Errorf("unknown step listed as %+v", last)
			}
		})
	}
}

func TestMigrationStatusPending(t *testing.T) {
	db, err := Open(DriverSQLite, filepath.Join(t.TempDir(), "fresh.db"), Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	status, err := db.MigrationStatus(t.Context())
	if err != nil {
		t.Fatalf("MigrationStatus: %v", err)
	}
	if want := len(migrationFileNames(t, "sqlite")); len(status) != want {
		t.Fatalf("MigrationStatus lists %d steps, want %d", len(status), want)
	}
	for _, s := range status {
		if s.Applied || !s.AppliedAt.IsZero() {
			t.Errorf("step %+v of a fresh database is applied", s)
		}
	}
	// Asking writes nothing: with USERD_DB_AUTO_MIGRATE=false, serve asks.
	if ok, err := db.hasTable(t.Context(), sqlDB(t, db), versionTable); err != nil || ok {
		t.Errorf("MigrationStatus created %s (%v, %v)", versionTable, ok, err)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	// Instances starting together each run Migrate; all must succeed and
	// leave one set of tables, each step applied once.
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			var dsn, driver string
			switch b.name {
			case "sqlite":
				driver, dsn = DriverSQLite, filepath.Join(t.TempDir(), "shared.db")
			case "mysql":
				driver, dsn = DriverMySQL, userdproc.MySQLDatabase(t, "userd_test_")
			default:
				driver, dsn = DriverPostgres, newPostgresSchema(t)
			}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() {
					db, err := Open(driver, dsn, Options{MaxOpenConns: 2})
					if err != nil {
						errs[i] = err
						return
					}
					defer mustClose(t, db)
					errs[i] = db.Migrate(t.Context())
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Errorf("Migrate: %v", err)
				}
			}
			db, err := Open(driver, dsn, Options{MaxOpenConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer mustClose(t, db)
			checkVersionTable(t, db, len(migrationFileNames(t, "sqlite")))
		})
	}
}

// checkVersionTable checks that goose's table holds version 0 and each of
// the steps 1..steps once.
func checkVersionTable(t *testing.T, db *DB, steps int) {
	t.Helper()
	var versions []int64
	if err := db.gorm.Raw("SELECT version_id FROM " + versionTable + " ORDER BY version_id").Scan(&versions).Error; err != nil {
		t.Fatalf("read %s: %v", versionTable, err)
	}
	want := make([]int64, steps+1)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(versions, want) {
		t.Errorf("%s holds versions %v, want %v", versionTable, versions, want)
	}
}

// sqlDB returns the writer's database/sql pool.
func sqlDB(t testing.TB, db *DB) *sql.DB {
	t.Helper()
	s, err := db.gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
