package application_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// BenchmarkDeliverySQLite answers b.N requests for a reset link through
// the real store on a SQLite file, with a mailer that takes each message
// at once: the sender's own cost per message, the SMTP server aside.
func BenchmarkDeliverySQLite(b *testing.B) {
	mailer := &fakeMailer{}
	svc, users, _ := sqliteServices(b, mailer)
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
