package application_test

import (
	"context"
	"fmt"
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
)

// BenchmarkDeliverySQLite answers b.N requests for a reset link through
// the real store on a SQLite file, with a mailer that takes each message
// at once: the sender's own cost per message, the SMTP server aside.
func BenchmarkDeliverySQLite(b *testing.B) {
	db, err := gormstore.Open("sqlite", filepath.Join(b.TempDir(), "u.db"), gormstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	clk := clock.System{}
	box, err := secretbox.New(secretbox.NewKey())
	if err != nil {
		b.Fatal(err)
	}
	keys := gormstore.NewKeyStore(db, box)
	users := gormstore.NewUserRepository(db)
	hasher := passwordhash.New(passwordhash.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32})
	iss, err := jwtissuer.New(keys, clk, jwtissuer.Options{Issuer: "x", Audience: "x"})
	if err != nil {
		b.Fatal(err)
	}
	mailer := &fakeMailer{}
	svc, err := application.New(application.Deps{Users: users, Tokens: gormstore.NewRefreshTokenStore(db),
		Attempts: gormstore.NewLoginAttemptStore(db), Hasher: hasher, Issuer: iss, Codec: startedCodec(b, keys, clk),
		Keys: &fakeKeys{clock: clk}, Clock: clk, Tx: db, Outbox: gormstore.NewOutbox(db, box),
		Links: gormstore.NewLinkTokenStore(db), Mailer: mailer},
		application.Config{RefreshTTL: time.Hour, RefreshFamilyTTL: 2 * time.Hour, VerifyEmailURL: "http://x/v", ResetPasswordURL: "http://x/r"})
	if err != nil {
		b.Fatal(err)
	}
	const accounts = 100
	now := time.Now()
	for i := range accounts {
		u := domain.User{ID: domain.NewUserID(now), Name: "A", Email: domain.Email(fmt.Sprintf("a%d@example.com", i)),
			PasswordHash: "x", Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: now, UpdatedAt: now}
		if err := users.Create(b.Context(), u); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	for i := range b.N {
		if err := svc.Mail.RequestPasswordReset(ctx, fmt.Sprintf("a%d@example.com", i%accounts)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for {
		n, err := svc.Delivery.RunOnce(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	b.StopTimer()
	if got := len(mailer.Sent()); got != b.N {
		b.Fatalf("%d messages sent, want %d", got, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}
