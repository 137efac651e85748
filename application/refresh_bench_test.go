package application_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/userdproc"
)

// sqliteServices are the use cases over the real adapters on a fresh
// SQLite file, with cheap password hashing and mailer, for the benchmarks
// of write paths; it returns the user repository and the hasher too, for
// their set-up.
func sqliteServices(b *testing.B, mailer ports.Mailer) (*application.Services, ports.UserRepository, ports.PasswordHasher) {
	b.Helper()
	return storeServices(b, gormstore.DriverSQLite, filepath.Join(b.TempDir(), "u.db"), mailer)
}

// postgresServices are sqliteServices on a fresh schema of
// USERD_TEST_POSTGRES_DSN; the benchmark skips without it.
func postgresServices(b *testing.B, mailer ports.Mailer) (*application.Services, ports.UserRepository, ports.PasswordHasher) {
	b.Helper()
	return storeServices(b, gormstore.DriverPostgres, userdproc.PostgresSchema(b, "bench_app_"), mailer)
}

func storeServices(b *testing.B, driver, dsn string, mailer ports.Mailer) (*application.Services, ports.UserRepository, ports.PasswordHasher) {
	b.Helper()
	db, err := gormstore.Open(driver, dsn, gormstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	clk := clock.System{}
	box, err := secretbox.New(secretbox.NewKey())
	if err != nil {
		b.Fatal(err)
	}
	stores := gormstore.NewStores(db, box, nil)
	keys := stores.Keys
	hasher := passwordhash.New(passwordhash.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})
	iss, err := jwtissuer.New(keys, clk, jwtissuer.Options{Issuer: "x", Audience: "x"})
	if err != nil {
		b.Fatal(err)
	}
	if err := iss.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	svc, err := application.New(application.Deps{Stores: stores, Hasher: hasher, Issuer: iss, Codec: startedCodec(b, keys, clk),
		Keys: &fakeKeys{clock: clk}, Clock: clk, Mailer: mailer, OTP: testOTP(b), RelyingParty: testRelyingParty(b)},
		application.Config{RefreshTTL: time.Hour, RefreshFamilyTTL: 2 * time.Hour, RefreshReuseGrace: 10 * time.Second,
			VerifyEmailURL: "http://x/v", ResetPasswordURL: "http://x/r"})
	if err != nil {
		b.Fatal(err)
	}
	return svc, stores.Users, hasher
}

// BenchmarkRefreshSQLite is one refresh end to end through the real
// adapters on a SQLite file: the write path the refresh goal measures.
func BenchmarkRefreshSQLite(b *testing.B) {
	benchmarkRefresh(b, sqliteServices)
}

// BenchmarkRefreshPostgres is BenchmarkRefreshSQLite on PostgreSQL, where
// the round trips of a refresh count as much as its CPU.
func BenchmarkRefreshPostgres(b *testing.B) {
	benchmarkRefresh(b, postgresServices)
}

func benchmarkRefresh(b *testing.B, services func(*testing.B, ports.Mailer) (*application.Services, ports.UserRepository, ports.PasswordHasher)) {
	svc, users, hasher := services(b, &fakeMailer{})
	auth := svc.Auth
	h, _ := hasher.Hash(context.Background(), "a long enough secret")
	now := time.Now()
	u := domain.User{ID: domain.NewUserID(now), Name: "A", Email: "a@example.com", PasswordHash: h, Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: now, UpdatedAt: now}
	if err := users.Create(b.Context(), u); err != nil {
		b.Fatal(err)
	}
	pair, err := tokensOf(auth.Login(b.Context(), application.LoginInput{Email: "a@example.com", Password: "a long enough secret"}))
	if err != nil {
		b.Fatal(err)
	}
	tok := pair.RefreshToken
	for b.Loop() {
		p, err := auth.Refresh(b.Context(), tok)
		if err != nil {
			b.Fatal(err)
		}
		tok = p.RefreshToken
	}
}
