package gormstore

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// The fixtures of these tests are databases made by userd before goose
// (commit e9f0d2f), with the commands of testdata/make-legacy-fixtures.sh:
// the schema of schema_migrations, steps 1 to 5, and data in every table.

// hasLegacyDatabases reports whether a backend has databases made before
// goose, with the legacy schema and keys in clear to upgrade: not MySQL,
// whose support began with goose.
func hasLegacyDatabases(backend string) bool { return backend != "mysql" }

// legacyDSN loads the fixture of the backend into a database of the test's
// own and returns its driver and DSN: a copy of testdata/legacy-v1.db, or
// testdata/legacy-v1.pg.sql loaded into an empty schema.
func legacyDSN(t *testing.T, backend string) (driver, dsn string) {
	t.Helper()
	if backend == "sqlite" {
		dsn = filepath.Join(t.TempDir(), "legacy.db")
		copyFile(t, filepath.Join("testdata", "legacy-v1.db"), dsn)
		return DriverSQLite, dsn
	}
	dsn = newPostgresSchema(t)
	script, err := os.ReadFile(filepath.Join("testdata", "legacy-v1.pg.sql"))
	if err != nil {
		t.Fatal(err)
	}
	// A pool of its own, closed after: the dump's SET statements stay
	// with its connection.
	loader, err := Open(DriverPostgres, dsn, Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, loader)
	// Without arguments, pgx sends the script in one simple-protocol
	// message, which may hold many statements.
	if _, err := sqlDB(t, loader).ExecContext(t.Context(), string(script)); err != nil {
		t.Fatalf("load legacy-v1.pg.sql: %v", err)
	}
	return DriverPostgres, dsn
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }() // read only
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func openDSN(t *testing.T, driver, dsn string) *DB {
	t.Helper()
	db, err := Open(driver, dsn, Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fixtureRows is every row of a database but the migration records.
type fixtureRows struct {
	Users    []userRow
	Keys     []keyRow
	Families []refreshFamilyRow
	Tokens   []refreshTokenRow
	Attempts []loginAttemptRow
	Audit    []auditEventRow
	Outbox   []outboxRow
	Links    []linkTokenRow
	// The tables of second factors, empty in the fixtures.
	TOTP       []totpFactorRow
	Recovery   []recoveryCodeRow
	Challenges []mfaChallengeRow
	Passkeys   []passkeyRow
	Ceremonies []passkeyCeremonyRow
}

// readRows reads every table, each sorted by primary key.
func readRows(t *testing.T, db *DB) fixtureRows {
	t.Helper()
	var r fixtureRows
	for _, dest := range []any{&r.Users, &r.Keys, &r.Families, &r.Tokens, &r.Attempts, &r.Audit, &r.Outbox, &r.Links,
		&r.TOTP, &r.Recovery, &r.Challenges, &r.Passkeys, &r.Ceremonies} {
		if err := db.gorm.Find(dest).Error; err != nil {
			t.Fatalf("read %T: %v", dest, err)
		}
	}
	// Sorted here, not by ORDER BY, which follows each column's collation.
	slices.SortFunc(r.Users, func(a, b userRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Keys, func(a, b keyRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Families, func(a, b refreshFamilyRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Tokens, func(a, b refreshTokenRow) int { return cmp.Compare(a.Hash, b.Hash) })
	slices.SortFunc(r.Attempts, func(a, b loginAttemptRow) int { return cmp.Compare(a.Email, b.Email) })
	slices.SortFunc(r.Audit, func(a, b auditEventRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Outbox, func(a, b outboxRow) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(r.Links, func(a, b linkTokenRow) int { return cmp.Compare(a.Hash, b.Hash) })
	return r
}

// upgraded returns the fixture's rows as the steps after the legacy ones
// leave them: the columns they add hold their defaults (a session of then
// signed in by password, last used when it was made, with no User-Agent
// or IP known; accounts with the empty metadata objects).
func upgraded(r fixtureRows) fixtureRows {
	r.Families = slices.Clone(r.Families)
	for i := range r.Families {
		r.Families[i].AMR = domain.MethodPassword
		r.Families[i].LastUsedMicros = r.Families[i].CreatedMicros
	}
	// Step 24 gives every account the empty objects.
	r.Users = slices.Clone(r.Users)
	for i := range r.Users {
		r.Users[i].Metadata, r.Users[i].AppMetadata = "{}", "{}"
	}
	return r
}

// compareRows reports each table whose rows differ from want.
func compareRows(t *testing.T, got, want fixtureRows) {
	t.Helper()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		name := gv.Type().Field(i).Name
		g, w := gv.Field(i), wv.Field(i)
		if g.Len() != w.Len() {
			t.Errorf("%s: %d rows, want %d", name, g.Len(), w.Len())
			continue
		}
		for j := range g.Len() {
			if !reflect.DeepEqual(g.Index(j).Interface(), w.Index(j).Interface()) {
				t.Errorf("%s[%d] = %s\nwant %s", name, j, showRow(g.Index(j).Interface()), showRow(w.Index(j).Interface()))
			}
		}
	}
}

// showRow prints a row with the values of its pointers.
func showRow(row any) string {
	v := reflect.ValueOf(row)
	var b strings.Builder
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		fmt.Fprintf(&b, "%s:%v ", v.Type().Field(i).Name, f)
	}
	return b.String()
}

func TestUpgradeLegacy(t *testing.T) {
	for _, b := range backends {
		if !hasLegacyDatabases(b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			ctx := t.Context()
			want := legacyFixtures[b.name]
			driver, dsn := legacyDSN(t, b.name)

			// Before any migration, the status is schema_migrations'.
			db := openDSN(t, driver, dsn)
			status, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range legacySteps {
				if st := status[i]; st.Version != s.version || st.Name != s.name || !st.Applied ||
					!st.AppliedAt.Equal(time.UnixMicro(want.migrated[i])) {
					t.Errorf("before the upgrade, status[%d] = %+v, want %q applied at %v", i, st, s.name, time.UnixMicro(want.migrated[i]).UTC())
				}
			}

			// Three nodes of the new version start together on the old
			// database.
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() {
					node, err := Open(driver, dsn, Options{MaxOpenConns: 2})
					if err != nil {
						errs[i] = err
						return
					}
					defer mustClose(t, node)
					errs[i] = node.Migrate(ctx)
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("Migrate: %v", err)
				}
			}

			steps := len(migrationFileNames(t, "sqlite"))
			checkVersionTable(t, db, steps)
			status, err = db.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(status) != steps {
				t.Fatalf("status lists %d steps, want %d: %+v", len(status), steps, status)
			}
			for i, s := range status {
				if !s.Applied {
					t.Errorf("step %d (%s) pending after Migrate", s.Version, s.Name)
				}
				// The adopted steps keep the time the old code applied
				// them (SQLite's goose table keeps whole seconds).
				if i < len(legacySteps) {
					applied := time.UnixMicro(want.migrated[i]).Truncate(time.Second)
					if !s.AppliedAt.Truncate(time.Second).Equal(applied) {
						t.Errorf("step %d applied at %v, want %v, as schema_migrations says", s.Version, s.AppliedAt, applied.UTC())
					}
				}
			}
			compareRows(t, readRows(t, db), upgraded(want.rows))
			var legacy []int64
			if err := db.gorm.Raw("SELECT applied_at FROM " + legacyTable + " ORDER BY version").Scan(&legacy).Error; err != nil {
				t.Fatalf("read %s after the upgrade: %v", legacyTable, err)
			}
			if !slices.Equal(legacy, want.migrated) {
				t.Errorf("%s after the upgrade = %v, want it untouched, %v", legacyTable, legacy, want.migrated)
			}

			// Migrating again is a no-op.
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("second Migrate: %v", err)
			}
			again, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, status) {
				t.Errorf("status after a second Migrate = %+v, want %+v", again, status)
			}
			checkVersionTable(t, db, steps)
			compareRows(t, readRows(t, db), upgraded(want.rows))

			// The upgraded data is usable: a user found by email, the keys
			// in order, a live refresh token rotated.
			box := newTestBox(t)
			users, keys, tokens := NewUserRepository(db), NewKeyStore(db, box), NewRefreshTokenStore(db)
			// The start seals the keys kept in clear; their bytes stay.
			if n, err := keys.SealClear(ctx); err != nil || n != len(want.rows.Keys) {
				t.Fatalf("SealClear = %d, %v; want the %d keys of the fixture", n, err, len(want.rows.Keys))
			}
			checkSealed(t, db, box, want.rows.Keys)
			ada := want.rows.Users[slices.IndexFunc(want.rows.Users, func(u userRow) bool { return u.Email == "ada@example.com" })]
			if got, err := users.ByEmail(ctx, "ada@example.com"); err != nil || got.ID != domain.UserID(ada.ID) || got.PasswordHash != ada.PasswordHash {
				t.Errorf("ByEmail(ada) = %+v, %v; want %s", got, err, ada.ID)
			}
			if got, err := keys.Keys(ctx, domain.KeyPurposeAccessToken); err != nil || len(got) != 2 {
				t.Errorf("access-token keys = %d, %v; want the 2 of the fixture", len(got), err)
			}
			live := want.rows.Tokens[slices.IndexFunc(want.rows.Tokens, func(r refreshTokenRow) bool {
				return r.UserID == ada.ID && r.UsedMicros == nil
			})]
			next := domain.RefreshToken{Hash: strings.Repeat("ab", 32), FamilyID: live.FamilyID, UserID: domain.UserID(ada.ID),
				IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
			if ok, err := tokens.Rotate(ctx, live.Hash, time.Now(), next); err != nil || !ok {
				t.Errorf("Rotate(ada's live token) = %v, %v; want a rotation", ok, err)
			}
			// Its session signed in by password, the only way then.
			if _, fam, err := tokens.Lookup(ctx, next.Hash); err != nil || !slices.Equal(fam.AMR, domain.AMRPassword) {
				t.Errorf("Lookup(ada's rotated token) = family amr %v, %v; want %v", fam.AMR, err, domain.AMRPassword)
			}
			checkUpgradedAccounts(t, db, box, want.rows.Users)
		})
	}
}

// checkUpgradedAccounts checks what the steps after the legacy ones
// brought to an upgraded database: the accounts read as not verified
// (nothing vouched for their addresses) and enabled, the fixture's one
// admin is the last enabled admin, and the outbox and link tokens work.
func checkUpgradedAccounts(t *testing.T, db *DB, box ports.SecretBox, fixture []userRow) {
	t.Helper()
	ctx := t.Context()
	users := NewUserRepository(db)
	for _, row := range fixture {
		got, err := users.ByID(ctx, domain.UserID(row.ID))
		if err != nil {
			t.Fatalf("ByID(%s): %v", row.Email, err)
		}
		if got.EmailVerified || got.Disabled || got.MFAEnabled {
			t.Errorf("upgraded %s: emailVerified %v, disabled %v, mfaEnabled %v; want false, false, false",
				row.Email, got.EmailVerified, got.Disabled, got.MFAEnabled)
		}
	}
	admin := fixture[slices.IndexFunc(fixture, func(u userRow) bool { return u.Email == "admin@example.com" })]
	if _, err := users.Update(ctx, domain.UserID(admin.ID), func(u *domain.User) error { u.Disabled = true; return nil }); !errors.Is(err, domain.ErrLastAdmin) {
		t.Errorf("Update(disable the fixture's only admin) = %v, want ErrLastAdmin", err)
	}
	ada := fixture[slices.IndexFunc(fixture, func(u userRow) bool { return u.Email == "ada@example.com" })]
	links := NewLinkTokenStore(db)
	_, hash := domain.NewLinkToken()
	now := time.Now()
	tok := domain.LinkToken{Hash: hash, Purpose: domain.LinkVerifyEmail, UserID: domain.UserID(ada.ID), Email: domain.Email(ada.Email),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Requested: true}
	if err := links.Issue(ctx, tok); err != nil {
		t.Errorf("Issue(a link token for ada): %v", err)
	} else if _, err := links.Use(ctx, hash, domain.LinkVerifyEmail, now.Add(time.Minute)); err != nil {
		t.Errorf("Use(ada's link token): %v", err)
	}
	outbox := NewOutbox(db, box)
	m := domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMail, Payload: []byte(`{}`), Secret: true,
		CreatedAt: now, NextAttemptAt: now}
	if err := outbox.Enqueue(ctx, m); err != nil {
		t.Errorf("Enqueue: %v", err)
	} else if got, err := outbox.Claim(ctx, now, time.Minute, 10); err != nil || len(got) != 1 || got[0].ID != m.ID {
		t.Errorf("Claim = %v, %v; want the message enqueued", got, err)
	}
}

// TestUpgradePartialLegacy upgrades a database on which the old code
// applied steps 1 to 3 only: goose applies 4 and 5.
func TestUpgradePartialLegacy(t *testing.T) {
	for _, b := range backends {
		if !hasLegacyDatabases(b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			ctx := t.Context()
			driver, dsn := legacyDSN(t, b.name)
			db := openDSN(t, driver, dsn)
			for _, stmt := range []string{
				"DROP TABLE audit_events", "DROP TABLE keys", "DELETE FROM " + legacyTable + " WHERE version > 3",
			} {
				if err := db.gorm.Exec(stmt).Error; err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			status, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range status {
				if s.Applied != (s.Version <= 3) {
					t.Errorf("before the upgrade, step %d applied = %v", s.Version, s.Applied)
				}
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			checkVersionTable(t, db, len(migrationFileNames(t, "sqlite")))
			want := upgraded(legacyFixtures[b.name].rows)
			want.Keys, want.Audit = nil, nil
			compareRows(t, readRows(t, db), want)
			k := domain.SigningKey{ID: "k-new", Purpose: domain.KeyPurposeAccessToken, Algorithm: "EdDSA", Secret: []byte("s"), CreatedAt: time.Now()}
			if err := NewKeyStore(db, newTestBox(t)).AddKey(ctx, k); err != nil {
				t.Errorf("AddKey to the table goose created: %v", err)
			}
		})
	}
}

// TestMigrationsMatchLegacySchema compares the schema goose makes on an
// empty database with the schema of the fixture, made by the old steps and
// then brought up to date: the same tables, columns, types, collations,
// keys and indexes, apart from the tables that record the migrations.
func TestMigrationsMatchLegacySchema(t *testing.T) {
	for _, b := range backends {
		if !hasLegacyDatabases(b.name) {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			driver, dsn := legacyDSN(t, b.name)
			legacyDB := openDSN(t, driver, dsn)
			// The steps after the legacy ones run on both.
			if err := legacyDB.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			legacy := schemaOf(t, legacyDB)
			fresh := schemaOf(t, b.open(t))
			if !slices.Equal(fresh, legacy) {
				t.Errorf("schema made by goose:\n%s\n\nschema made by the old steps:\n%s",
					strings.Join(fresh, "\n"), strings.Join(legacy, "\n"))
			}
		})
	}
}

// schemaOf describes the schema, one sorted line per table, column,
// index and constraint, without the migration records.
func schemaOf(t *testing.T, db *DB) []string {
	t.Helper()
	skip := "('" + legacyTable + "', '" + versionTable + "', 'sqlite_sequence')"
	var query string
	if db.dialect == dialectPostgres {
		query = `
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable ||
       ' collate=' || COALESCE(collation_name, '-') || ' default=' || COALESCE(column_default, '-')
  FROM information_schema.columns WHERE table_schema = current_schema() AND table_name NOT IN ` + skip + `
UNION ALL
SELECT 'index ' || indexname || ' ' || replace(indexdef, current_schema() || '.', '')
  FROM pg_indexes WHERE schemaname = current_schema() AND tablename NOT IN ` + skip + `
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
   AND conrelid::regclass::text NOT IN ` + skip
	} else {
		query = `SELECT type || ' ' || name || ' ' || tbl_name || ' ' || COALESCE(sql, '-') FROM sqlite_master
  WHERE tbl_name NOT IN ` + skip
	}
	var lines []string
	if err := db.gorm.Raw(query).Scan(&lines).Error; err != nil {
		t.Fatalf("read the schema: %v", err)
	}
	// SQLite keeps each CREATE statement as written: compare them with
	// the layout left out.
	space := regexp.MustCompile(`\s+`)
	for i, l := range lines {
		lines[i] = space.ReplaceAllString(l, " ")
	}
	slices.Sort(lines)
	return lines
}

// legacyFixture is what a fixture holds: its rows, and the applied_at of
// each step in schema_migrations.
type legacyFixture struct {
	rows     fixtureRows
	migrated []int64
}

func ptr[T any](v T) *T { return &v }

func unhex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
