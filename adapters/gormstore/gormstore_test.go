package gormstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/contract"
	"github.com/userd/userd/test/userdproc"
)

// backends lists the databases the tests run on; a backend's open function
// returns a migrated, empty database of its own.
var backends = []struct {
	name string
	// require skips the test when the backend is not available.
	require func(t *testing.T)
	open    func(t testing.TB) *DB
}{
	{"sqlite", func(*testing.T) {}, openSQLite},
	{"postgres", func(t *testing.T) { postgresDSN(t) }, openPostgres},
	{"mysql", func(t *testing.T) { mysqlDSN(t) }, openMySQL},
}

func TestContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			t.Run("users", func(t *testing.T) {
				t.Parallel()
				contract.UserRepository(t, func(t *testing.T) ports.UserRepository {
					return NewUserRepository(b.open(t))
				})
			})
			t.Run("refresh_tokens", func(t *testing.T) {
				t.Parallel()
				contract.RefreshTokenStore(t, func(t *testing.T) (ports.UserRepository, ports.RefreshTokenStore) {
					db := b.open(t)
					return NewUserRepository(db), NewRefreshTokenStore(db)
				})
			})
			t.Run("login_attempts", func(t *testing.T) {
				t.Parallel()
				contract.LoginAttemptStore(t, func(t *testing.T) ports.LoginAttemptStore {
					return NewLoginAttemptStore(b.open(t))
				})
			})
			t.Run("keys", func(t *testing.T) {
				t.Parallel()
				contract.KeyStore(t, func(t *testing.T) contract.KeyStorage { return keyStorage(b.open(t)) })
			})
			t.Run("health", func(t *testing.T) {
				t.Parallel()
				contract.HealthChecker(t, func(t *testing.T) ports.HealthChecker { return b.open(t) })
			})
			t.Run("audit", func(t *testing.T) {
				t.Parallel()
				contract.AuditLog(t, func(t *testing.T) ports.AuditLog { return NewAuditLog(b.open(t)) })
			})
			t.Run("account_status", func(t *testing.T) {
				t.Parallel()
				contract.UserAccountStatus(t, func(t *testing.T) ports.UserRepository {
					return NewUserRepository(b.open(t))
				})
			})
			t.Run("user_metadata", func(t *testing.T) {
				t.Parallel()
				contract.UserMetadata(t, func(t *testing.T) ports.UserRepository {
					return NewUserRepository(b.open(t))
				})
			})
			t.Run("outbox", func(t *testing.T) {
				t.Parallel()
				contract.Outbox(t, func(t *testing.T) contract.OutboxStorage { return outboxStorage(b.name, b.open(t)) })
			})
			t.Run("link_tokens", func(t *testing.T) {
				t.Parallel()
				contract.LinkTokenStore(t, func(t *testing.T) (ports.UserRepository, ports.LinkTokenStore) {
					db := b.open(t)
					return NewUserRepository(db), NewLinkTokenStore(db)
				})
			})
			t.Run("mfa", func(t *testing.T) {
				t.Parallel()
				contract.MFAStore(t, func(t *testing.T) contract.MFAStorage { return mfaStorage(b.open(t)) })
			})
			t.Run("mfa_challenges", func(t *testing.T) {
				t.Parallel()
				contract.MFAChallengeStore(t, func(t *testing.T) (ports.UserRepository, ports.MFAChallengeStore) {
					db := b.open(t)
					return NewUserRepository(db), NewMFAChallengeStore(db)
				})
			})
			t.Run("passkeys", func(t *testing.T) {
				t.Parallel()
				contract.PasskeyStore(t, func(t *testing.T) (ports.UserRepository, ports.PasskeyStore) {
					db := b.open(t)
					return NewUserRepository(db), NewPasskeyStore(db)
				})
			})
			t.Run("oauth_clients", func(t *testing.T) {
				t.Parallel()
				contract.OAuthClientStore(t, func(t *testing.T) contract.OAuthClientStorage {
					db := b.open(t)
					return contract.OAuthClientStorage{Tx: db, Clients: NewOAuthClientStore(db)}
				})
			})
			t.Run("identity_providers", func(t *testing.T) {
				t.Parallel()
				contract.IdentityProviderStore(t, func(t *testing.T) contract.IdentityStorage { return identityStorage(b.open(t)) })
			})
			t.Run("identities", func(t *testing.T) {
				t.Parallel()
				contract.UserIdentityStore(t, func(t *testing.T) contract.IdentityStorage { return identityStorage(b.open(t)) })
			})
			t.Run("personal_tokens", func(t *testing.T) {
				t.Parallel()
				contract.PersonalTokenStore(t, func(t *testing.T) (ports.UserRepository, ports.PersonalTokenStore) {
					db := b.open(t)
					return NewUserRepository(db), NewPersonalTokenStore(db)
				})
			})
			t.Run("auth_requests", func(t *testing.T) {
				t.Parallel()
				contract.AuthRequestStore(t, func(t *testing.T) contract.ProviderStorage { return providerStorage(b.open(t)) })
			})
			t.Run("grants", func(t *testing.T) {
				t.Parallel()
				contract.GrantStore(t, func(t *testing.T) contract.ProviderStorage { return providerStorage(b.open(t)) })
			})
			t.Run("client_revoker", func(t *testing.T) {
				t.Parallel()
				contract.OAuthClientRevoker(t, func(t *testing.T) contract.ProviderStorage { return providerStorage(b.open(t)) })
			})
			t.Run("purge", func(t *testing.T) {
				t.Parallel()
				contract.Purger(t, func(t *testing.T) contract.PurgeStores {
					db, box := b.open(t), newTestBox(t)
					return contract.PurgeStores{
						Users: NewUserRepository(db), Tokens: NewRefreshTokenStore(db), Attempts: NewLoginAttemptStore(db),
						Outbox: NewOutbox(db, box), Links: NewLinkTokenStore(db), Challenges: NewMFAChallengeStore(db),
						Passkeys: NewPasskeyStore(db), Audit: NewAuditLog(db), Purger: NewPurger(db),
						Clients: NewOAuthClientStore(db), AuthRequests: NewAuthRequestStore(db),
						PersonalTokens: NewPersonalTokenStore(db),
					}
				})
			})
			t.Run("lock", func(t *testing.T) {
				t.Parallel()
				contract.Lock(t, func(t *testing.T) ports.Lock { return NewLock(b.open(t)) })
			})
			t.Run("transactor", func(t *testing.T) {
				t.Parallel()
				contract.Transactor(t, func(t *testing.T) contract.TxStores {
					db, box := b.open(t), newTestBox(t)
					return contract.TxStores{
						Tx: db, Users: NewUserRepository(db), Tokens: NewRefreshTokenStore(db),
						Attempts: NewLoginAttemptStore(db), Keys: NewKeyStore(db, box), Audit: NewAuditLog(db),
						Outbox: NewOutbox(db, box), Links: NewLinkTokenStore(db),
						MFA: NewMFAStore(db, box), Challenges: NewMFAChallengeStore(db), Passkeys: NewPasskeyStore(db),
					}
				})
			})
		})
	}
}

// providerStorage is db's OpenID provider tables for the contract
// suites.
func providerStorage(db *DB) contract.ProviderStorage {
	return contract.ProviderStorage{
		Tx: db, Users: NewUserRepository(db), Clients: NewOAuthClientStore(db), Tokens: NewRefreshTokenStore(db),
		AuthRequests: NewAuthRequestStore(db), Grants: NewGrantStore(db), Revoker: NewOAuthClientRevoker(db),
	}
}

// keyStorage is db's key table for the contract suite.
func keyStorage(db *DB) contract.KeyStorage {
	return contract.KeyStorage{
		Open: func(box ports.SecretBox) ports.KeyStore { return NewKeyStore(db, box) },
		Stored: func(t *testing.T, id string) []byte {
			var row keyRow
			if err := db.gorm.Where("id = ?", id).Take(&row).Error; err != nil {
				t.Fatalf("read key %s: %v", id, err)
			}
			if !row.Sealed {
				t.Errorf("key %s: sealed = false", id)
			}
			return row.Secret
		},
		SetStored: func(t *testing.T, id string, stored []byte) {
			if err := db.gorm.Model(&keyRow{}).Where("id = ?", id).Update("secret", stored).Error; err != nil {
				t.Fatalf("write key %s: %v", id, err)
			}
		},
		Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) {
			return NewKeyStore(db, box).Reencrypt(ctx)
		},
	}
}

// mfaStorage is db's second-factor tables for the contract suite.
func mfaStorage(db *DB) contract.MFAStorage {
	return contract.MFAStorage{
		Users:    NewUserRepository(db),
		Passkeys: NewPasskeyStore(db),
		Open:     func(box ports.SecretBox) ports.MFAStore { return NewMFAStore(db, box) },
		Stored: func(t *testing.T, user domain.UserID) []byte {
			var row totpFactorRow
			if err := db.gorm.Where("user_id = ?", string(user)).Take(&row).Error; err != nil {
				t.Fatalf("read totp factor of %s: %v", user, err)
			}
			return row.Secret
		},
		SetStored: func(t *testing.T, user domain.UserID, stored []byte) {
			if err := db.gorm.Model(&totpFactorRow{}).Where("user_id = ?", string(user)).Update("secret", stored).Error; err != nil {
				t.Fatalf("write totp factor of %s: %v", user, err)
			}
		},
		Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) {
			return NewMFAStore(db, box).Reencrypt(ctx)
		},
	}
}

// identityStorage is db's identity providers and identities for the
// contract suites.
func identityStorage(db *DB) contract.IdentityStorage {
	return contract.IdentityStorage{
		Users:      NewUserRepository(db),
		Open:       func(box ports.SecretBox) ports.IdentityProviderStore { return NewIdentityProviderStore(db, box) },
		Identities: NewUserIdentityStore(db),
		StoredSecret: func(t *testing.T, slug string) []byte {
			var row identityProviderRow
			if err := db.gorm.Where("slug = ?", slug).Take(&row).Error; err != nil {
				t.Fatalf("read identity provider %s: %v", slug, err)
			}
			return row.ClientSecret
		},
		Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) {
			return NewIdentityProviderStore(db, box).Reencrypt(ctx)
		},
	}
}

// outboxStorage is db's outbox table for the contract suite. Each Open is
// a handle of its own on the database, as another node has: on SQLite a
// second DB on the file, on PostgreSQL a second pool on the schema.
func outboxStorage(backend string, db *DB) contract.OutboxStorage {
	return contract.OutboxStorage{
		Open: func(t *testing.T, box ports.SecretBox) ports.Outbox {
			node, err := Open(db.driver, db.dsn, Options{MaxOpenConns: 4})
			if err != nil {
				t.Fatalf("open another handle on the %s database: %v", backend, err)
			}
			t.Cleanup(func() { _ = node.Close() })
			return NewOutbox(node, box)
		},
		Stored: func(t *testing.T, id domain.OutboxID) []byte {
			var row outboxRow
			if err := db.gorm.Where("id = ?", string(id)).Take(&row).Error; err != nil {
				t.Fatalf("read outbox message %s: %v", id, err)
			}
			return row.Payload
		},
	}
}

func TestSQLiteDSN(t *testing.T) {
	const all = "_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=1&_synchronous=NORMAL&_txlock=immediate"
	for _, c := range []struct{ in, want string }{
		{"userd.db", "userd.db?" + all},
		{"/var/lib/userd/userd.db", "/var/lib/userd/userd.db?" + all},
		{"file:userd.db", "file:userd.db?" + all},
		{"file:userd.db?", "file:userd.db?" + all},
		{"file:userd.db?mode=rwc&cache=private", "file:userd.db?mode=rwc&cache=private&" + all},
		{"userd.db?_busy_timeout=50&_sync=NORMAL", "userd.db?_busy_timeout=50&_sync=NORMAL&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate"},
		{"userd.db?_fk=true&_journal=DELETE&_timeout=1&_synchronous=OFF&_txlock=exclusive", "userd.db?_fk=true&_journal=DELETE&_timeout=1&_synchronous=OFF&_txlock=exclusive"},
		{":memory:", ":memory:?" + all},
	} {
		got, err := sqliteDSN(c.in)
		if err != nil || got != c.want {
			t.Errorf("sqliteDSN(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "userd.db?_foreign_keys=0", "userd.db?_fk=off", "userd.db?%zz"} {
		if got, err := sqliteDSN(in); err == nil {
			t.Errorf("sqliteDSN(%q) = %q, want an error", in, got)
		}
	}
}

func TestSQLitePragmas(t *testing.T) {
	db := openSQLite(t)
	for pragma, want := range map[string]string{
		"journal_mode": "wal",
		"busy_timeout": "5000",
		"foreign_keys": "1",
		"synchronous":  "1", // NORMAL
	} {
		var got string
		if err := db.gorm.Raw("PRAGMA " + pragma).Scan(&got).Error; err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestSQLiteInMemory(t *testing.T) {
	// The single connection keeps ":memory:" one database across queries
	// (each connection would otherwise open an empty one of its own).
	contract.UserRepository(t, func(t *testing.T) ports.UserRepository {
		return NewUserRepository(openSQLiteDSN(t, ":memory:"))
	})
}

// TestSQLiteBusyIsUnavailable holds the write lock from one handle, as
// another process would, and writes from a second handle with a short
// busy timeout.
func TestSQLiteBusyIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	holder := openSQLiteDSN(t, path)
	waiter := openSQLiteDSN(t, path+"?_busy_timeout=50")

	locked, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- holder.gorm.Transaction(func(_ *gorm.DB) error {
			// BEGIN IMMEDIATE has taken the write lock already.
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	_, err := NewLoginAttemptStore(waiter).Reserve(t.Context(), "ada@example.com", time.Now())
	close(release)
	if txErr := <-done; txErr != nil {
		t.Fatalf("holder transaction: %v", txErr)
	}
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("write while another process holds the lock: error = %v, want ErrUnavailable", err)
	}
}

// TestSQLiteRotateAcrossHandles rotates one token from two connection
// pools on one file, as two instances sharing a database would.
func TestSQLiteRotateAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openSQLiteDSN(t, path), openSQLiteDSN(t, path)
	ctx := t.Context()
	u := domain.User{ID: domain.NewUserID(time.Now()), Name: "Ada", Email: "ada@example.com", PasswordHash: "x",
		Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := NewUserRepository(a).Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	fam := domain.RefreshFamily{ID: randomHex(t), UserID: u.ID, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	first := domain.RefreshToken{Hash: randomHex(t), FamilyID: fam.ID, UserID: u.ID, IssuedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := NewRefreshTokenStore(a).CreateFamily(ctx, fam, first); err != nil {
		t.Fatal(err)
	}
	stores := []*RefreshTokenStore{NewRefreshTokenStore(a), NewRefreshTokenStore(b)}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for i := range 10 {
		wg.Go(func() {
			succ := first
			succ.Hash = randomHex(t)
			ok, err := stores[i%2].Rotate(ctx, first.Hash, time.Now(), succ)
			if err != nil {
				t.Errorf("Rotate: %v", err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d rotations of one token through two pools succeeded, want 1", wins)
	}
}

func TestPingClosed(t *testing.T) {
	db := openSQLite(t)
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.Ping(t.Context()); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Ping(closed) error = %v, want ErrUnavailable", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("oracle", "x", Options{}); err == nil {
		t.Error("Open(oracle) succeeded, want an error")
	}
	if _, err := Open(DriverMySQL, "userd:s3cret@tcp(127.0.0.1:3306", Options{}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open(malformed mysql DSN) error = %v, want one without the password", err)
	}
	_, err := Open(DriverMySQL, "userd:s3cret@tcp(127.0.0.1:1)/userd?timeout=2s", Options{})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open(unreachable mysql) error = %v, want ErrUnavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q carries the password", err)
	}
	// Nothing listens on port 1: a database that is down is unavailable,
	// and the error does not repeat the DSN's password.
	_, err = Open(DriverPostgres, "postgres://userd:s3cret@127.0.0.1:1/userd?sslmode=disable&connect_timeout=2", Options{})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open(unreachable postgres) error = %v, want ErrUnavailable", err)
	}
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q carries the password", err)
	}
}

// mustClose closes c and fails the test, without stopping it, when Close
// fails; meant for defer, also in the test's other goroutines.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func openSQLite(t testing.TB) *DB {
	t.Helper()
	return openSQLiteDSN(t, filepath.Join(t.TempDir(), "userd.db"))
}

func openSQLiteDSN(t testing.TB, dsn string) *DB {
	t.Helper()
	db, err := Open(DriverSQLite, dsn, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// openPostgres returns a migrated database in a schema of its own, dropped
// at the end of the test.
func openPostgres(t testing.TB) *DB {
	t.Helper()
	// A small pool: parallel tests each hold one, under max_connections.
	db, err := Open(DriverPostgres, newPostgresSchema(t), Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// openMySQL returns a migrated database of its own, dropped at the end of
// the test.
func openMySQL(t testing.TB) *DB {
	t.Helper()
	db, err := Open(DriverMySQL, userdproc.MySQLDatabase(t, "userd_test_"), Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// mysqlDSN returns USERD_TEST_MYSQL_DSN, skipping the test without it
// (failing it in CI), as postgresDSN does.
func mysqlDSN(t testing.TB) string {
	t.Helper()
	return userdproc.RequiredEnv(t, "USERD_TEST_MYSQL_DSN", "MySQL contract")
}

// newPostgresSchema creates an empty schema, to be dropped at the end of
// the test, and returns a DSN whose search_path selects it. It skips the
// test when no PostgreSQL is configured, except in CI.
func newPostgresSchema(t testing.TB) string {
	t.Helper()
	base := postgresDSN(t)
	admin, err := postgresAdmin()
	if err != nil {
		t.Fatalf("connect to USERD_TEST_POSTGRES_DSN: %v", err)
	}
	schema := "userd_test_" + randomHex(t)[:16]
	if err := admin.gorm.Exec(`CREATE SCHEMA ` + schema).Error; err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := admin.gorm.WithContext(ctx).Exec(`DROP SCHEMA ` + schema + ` CASCADE`).Error; err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(base, schema)
}

// postgresDSN returns USERD_TEST_POSTGRES_DSN. Without it, the test is
// skipped, except in CI, where PostgreSQL must be tested.
func postgresDSN(t testing.TB) string {
	t.Helper()
	return userdproc.RequiredEnv(t, "USERD_TEST_POSTGRES_DSN", "PostgreSQL contract")
}

// postgresAdmin is one small pool, shared by all tests, that creates and
// drops their schemas. It lives as long as the test binary.
var postgresAdmin = sync.OnceValues(func() (*DB, error) {
	return Open(DriverPostgres, os.Getenv("USERD_TEST_POSTGRES_DSN"), Options{MaxOpenConns: 2})
})

// withSearchPath sets search_path in a URL or key=value DSN; pgx sends it
// to the server as a run-time parameter.
func withSearchPath(dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// On SQLite, reads use their own read-only pool: they see committed writes
// at once, cannot write, and are not held up by an open write transaction.
func TestSQLiteReaders(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	if db.read == db.gorm {
		t.Fatal("SQLite file database without a separate read pool")
	}
	if err := db.read.Exec("CREATE TABLE nope (x INTEGER)").Error; err == nil {
		t.Fatal("the read pool can write")
	}
	repo := NewUserRepository(db)
	u := benchUser(1)
	if err := repo.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.ByID(t.Context(), u.ID); err != nil {
		t.Fatalf("a committed create is not visible to the readers: %v", err)
	}
	// Hold the write lock in an open transaction: readers go on.
	tx := db.gorm.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	defer tx.Rollback()
	if err := tx.Exec("UPDATE users SET name = 'Held' WHERE id = ?", string(u.ID)).Error; err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		got, err := repo.ByID(t.Context(), u.ID)
		if err == nil && got.Name == "Held" {
			err = fmt.Errorf("a reader saw an uncommitted write")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a read waited for the open write transaction")
	}
}

func TestSQLiteInMemoryKeepsOneConnection(t *testing.T) {
	t.Parallel()
	db, err := Open(DriverSQLite, "file::memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	if db.read != db.gorm {
		t.Fatal("an in-memory database got a second pool, which would be another database")
	}
}
