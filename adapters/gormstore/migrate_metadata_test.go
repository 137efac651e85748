package gormstore

import (
	"testing"

	"github.com/userd/userd/test/userdproc"
)

// upgradeBackend is a database of each backend to migrate step by step.
type upgradeBackend struct {
	name   string
	driver string
	dsn    func(t *testing.T) string
}

var upgradeBackends = []upgradeBackend{
	{"sqlite", DriverSQLite, func(t *testing.T) string { return t.TempDir() + "/userd.db" }},
	{"postgres", DriverPostgres, func(t *testing.T) string { return newPostgresSchema(t) }},
	{"mysql", DriverMySQL, func(t *testing.T) string {
		mysqlDSN(t)
		return userdproc.MySQLDatabase(t, "userd_test_")
	}},
}

// migratedUpTo opens a new database of backend b migrated up to step
// version only, as a binary of that schema would have left it.
func migratedUpTo(t *testing.T, b upgradeBackend, version int64) *DB {
	t.Helper()
	db, err := Open(b.driver, b.dsn(t), Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.prepareVersionTable(t.Context(), nil); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	p, err := db.migrationProvider()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatalf("up to %d: %v", version, err)
	}
	return db
}

// TestMigration24_existing_users_get_empty_metadata migrates a database
// up to step 23, stores an account there as a binary of that schema would,
// and migrates the rest: the account reads back with the empty objects.
func TestMigration24_existing_users_get_empty_metadata(t *testing.T) {
	for _, b := range upgradeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := migratedUpTo(t, b, 23)
			const id = "6740f1c2a1b2c3d4e5f60718"
			if err := db.gorm.Exec(`INSERT INTO users (id, name, email, password_hash, profiles, created_at, updated_at,
				email_verified, disabled, mfa_enabled) VALUES (?, 'Ada', 'ada@example.com', '', 'ROLE_CUSTOMER', 1, 1, ?, ?, ?)`,
				id, false, false, false).Error; err != nil {
				t.Fatalf("insert at step 23: %v", err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			var stored struct{ Metadata, AppMetadata string }
			if err := db.gorm.Raw(`SELECT metadata, app_metadata FROM users WHERE id = ?`, id).Scan(&stored).Error; err != nil {
				t.Fatal(err)
			}
			if stored.Metadata != "{}" || stored.AppMetadata != "{}" {
				t.Fatalf("stored %+v, want {} and {}", stored)
			}
			u, err := NewUserRepository(db).ByID(ctx, id)
			if err != nil || !u.Metadata.IsEmpty() || !u.AppMetadata.IsEmpty() {
				t.Fatalf("ByID = %+v, %v; want the empty objects", u, err)
			}
		})
	}
}
