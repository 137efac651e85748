package gormstore

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// The repository hot paths on each database: a primary-key read (what a
// signed-in request costs to confirm its caller) and a create.
func BenchmarkUserRepository(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			repo := NewUserRepository(db)
			ctx := b.Context()
			seed := benchUser(0)
			if err := repo.Create(ctx, seed); err != nil {
				b.Fatal(err)
			}
			b.Run("by_id", func(b *testing.B) {
				for b.Loop() {
					if _, err := repo.ByID(ctx, seed.ID); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("create", func(b *testing.B) {
				i := 1
				for b.Loop() {
					if err := repo.Create(ctx, benchUser(i)); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("list_50", func(b *testing.B) {
				for b.Loop() {
					if _, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 51}}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// createBenchUser stores benchUser(0) in db and returns it.
func createBenchUser(b *testing.B, db *DB) domain.User {
	b.Helper()
	u := benchUser(0)
	if err := NewUserRepository(db).Create(b.Context(), u); err != nil {
		b.Fatal(err)
	}
	return u
}

// issueBenchLink issues a link token of purpose to u, created at now,
// and returns its hash.
func issueBenchLink(b *testing.B, links *LinkTokenStore, u domain.User, purpose domain.LinkPurpose, now time.Time) string {
	b.Helper()
	_, hash := domain.NewLinkToken()
	tok := domain.LinkToken{Hash: hash, Purpose: purpose, UserID: u.ID, Email: u.Email, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := links.Issue(b.Context(), tok); err != nil {
		b.Fatal(err)
	}
	return hash
}

func benchUser(i int) domain.User {
	now := time.Now().UTC()
	return domain.User{
		ID:           domain.NewUserID(now),
		Name:         "Bench",
		Email:        domain.Email(fmt.Sprintf("bench-%d-%d@example.com", now.UnixNano(), i)),
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g",
		Profiles:     domain.Profiles{domain.ProfileCustomer},
		CreatedAt:    now,
		UpdatedAt:    now,
	}
}

// BenchmarkListPages checks the keyset pagination goal of issue 6: after
// 1,000,000 users, the last page of 50 costs no more than twice the first.
// It also measures the search by email prefix, at its best and worst.
// USERD_BENCH_USERS changes the table size (a million takes about a minute
// to insert on SQLite).
func BenchmarkListPages(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("USERD_BENCH_USERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			repo := NewUserRepository(db)
			ctx := b.Context()
			base := time.Unix(1_700_000_000, 0)
			batch := make([]domain.User, 0, 5000)
			for i := range n {
				u := benchUser(i)
				// Ids in creation order, one second apart, like real ones.
				u.ID = domain.NewUserID(base.Add(time.Duration(i) * time.Second))
				batch = append(batch, u)
				if len(batch) == cap(batch) || i == n-1 {
					if err := repo.CreateMany(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			all, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 1}})
			if err != nil || len(all) != 1 {
				b.Fatal(err)
			}
			// The cursor of the last page: the id 50 rows before the end.
			last := domain.NewUserID(base.Add(time.Duration(n-51) * time.Second))
			b.Run("first_page", func(b *testing.B) {
				for b.Loop() {
					if _, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 51}}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("last_page", func(b *testing.B) {
				for b.Loop() {
					page, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 51, After: last}})
					if err != nil || len(page) == 0 {
						b.Fatalf("last page: %d rows, %v", len(page), err)
					}
				}
			})
			// The search by prefix has no index: a prefix every email has
			// fills the page at once, one no email has reads the table.
			for _, prefix := range []string{"bench-", "nobody"} {
				b.Run("email_prefix_"+prefix, func(b *testing.B) {
					for b.Loop() {
						if _, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 51}, EmailPrefix: prefix}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// What the lock-out costs a login on each database. Before the
// reservation, a login read the email's record (read_before: the query
// Get made) and wrote nothing on success; now it reserves (an upsert) and,
// on success, resets (a delete). A locked email costs the upsert that
// writes nothing and the read of the wait.
func BenchmarkLoginAttempts(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			store := NewLoginAttemptStore(db)
			ctx := b.Context()
			b.Run("read_before", func(b *testing.B) {
				for b.Loop() {
					var row loginAttemptRow
					if err := db.read.WithContext(ctx).Where("email = ?", "ada@example.com").Limit(1).Find(&row).Error; err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("reserve_and_reset", func(b *testing.B) {
				for b.Loop() {
					if _, err := store.Reserve(ctx, "ada@example.com", time.Now()); err != nil {
						b.Fatal(err)
					}
					if err := store.Reset(ctx, "ada@example.com"); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("reserve_locked", func(b *testing.B) {
				locked := domain.Email(fmt.Sprintf("locked-%d@example.com", time.Now().UnixNano()))
				for range domain.LoginFreeFailures {
					if _, err := store.Reserve(ctx, locked, time.Now()); err != nil {
						b.Fatal(err)
					}
				}
				for b.Loop() {
					if _, err := store.Reserve(ctx, locked, time.Now()); err == nil {
						b.Fatal("admitted while locked")
					}
				}
			})
		})
	}
}

// The paths that run in transactions, on each database: a refresh's
// rotation (a lookup, then the rotation's transaction), an update, and a
// WithinTx that uses a link token, updates its user and enqueues a
// message, as a password reset does.
func BenchmarkTransactions(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			users, tokens := NewUserRepository(db), NewRefreshTokenStore(db)
			links, outbox := NewLinkTokenStore(db), NewOutbox(db, newTestBox(b))
			ctx := b.Context()
			u := createBenchUser(b, db)
			b.Run("rotate", func(b *testing.B) {
				now := time.Now()
				fam := domain.RefreshFamily{ID: randomHex(b), UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
				tok := domain.RefreshToken{Hash: randomHex(b), FamilyID: fam.ID, UserID: u.ID, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
				if err := tokens.CreateFamily(ctx, fam, tok); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, _, err := tokens.Lookup(ctx, tok.Hash); err != nil {
						b.Fatal(err)
					}
					next := tok
					next.Hash = randomHex(b)
					if ok, err := tokens.Rotate(ctx, tok.Hash, time.Now(), next); err != nil || !ok {
						b.Fatal(ok, err)
					}
					tok = next
				}
			})
			b.Run("update", func(b *testing.B) {
				for b.Loop() {
					if _, err := users.Update(ctx, u.ID, func(v *domain.User) error { v.UpdatedAt = time.Now(); return nil }); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("reset_within_tx", func(b *testing.B) {
				for b.Loop() {
					now := time.Now()
					hash := issueBenchLink(b, links, u, domain.LinkResetPassword, now)
					err := db.WithinTx(ctx, func(ctx context.Context) error {
						if _, err := links.Use(ctx, hash, domain.LinkResetPassword, now); err != nil {
							return err
						}
						if _, err := users.Update(ctx, u.ID, func(v *domain.User) error { v.EmailVerified = true; return nil }); err != nil {
							return err
						}
						if _, err := tokens.RevokeUser(ctx, u.ID, now); err != nil {
							return err
						}
						return outbox.Enqueue(ctx, domain.OutboxMessage{ID: domain.NewOutboxID(now), Kind: domain.OutboxMail,
							Payload: []byte(`{}`), CreatedAt: now, NextAttemptAt: now})
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// The session list of a user with 100 sessions: the query behind GET
// /api/users/{id}/sessions (goal: under 5 ms of server time).
func BenchmarkSessions100(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			tokens := NewRefreshTokenStore(db)
			ctx := b.Context()
			u := createBenchUser(b, db)
			now := time.Now().UTC().Truncate(time.Microsecond)
			for i := range 100 {
				f := domain.RefreshFamily{ID: fmt.Sprintf("%032x", i), UserID: u.ID, CreatedAt: now.Add(time.Duration(i) * time.Second),
					ExpiresAt: now.Add(90 * 24 * time.Hour), AMR: domain.AMRPassword,
					UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36",
					IP:        "198.51.100.7"}
				t := domain.RefreshToken{Hash: fmt.Sprintf("%064x", i), FamilyID: f.ID, UserID: u.ID, IssuedAt: f.CreatedAt, ExpiresAt: f.ExpiresAt}
				if err := tokens.CreateFamily(ctx, f, t); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				got, err := tokens.Sessions(ctx, u.ID, now)
				if err != nil || len(got) != 100 {
					b.Fatalf("%d sessions, %v", len(got), err)
				}
			}
		})
	}
}

// An outbox claim on each database: the statement each delivery worker
// runs on every tick. The ten oldest of 100 due messages are leased again
// at each iteration, their lease having ended.
func BenchmarkOutboxClaim(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			outbox := NewOutbox(db, newTestBox(b))
			ctx := b.Context()
			start := time.Now().UTC().Truncate(time.Microsecond)
			for i := range 100 {
				created := start.Add(time.Duration(i) * time.Microsecond)
				m := domain.OutboxMessage{ID: domain.NewOutboxID(created), Kind: domain.OutboxMail, Payload: []byte(`{}`),
					Secret: i%2 == 0, CreatedAt: created, NextAttemptAt: start}
				if err := outbox.Enqueue(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
			now := start
			for b.Loop() {
				now = now.Add(time.Second)
				if got, err := outbox.Claim(ctx, now, time.Second, 10); err != nil || len(got) != 10 {
					b.Fatalf("claimed %d, %v", len(got), err)
				}
			}
		})
	}
}

// The writes that answer the row they change (UPDATE … RETURNING, and
// DELETE … RETURNING, on MySQL a transaction of two statements each), on
// each database: a link token issued then used, a passkey ceremony
// created then taken.
func BenchmarkReturningWrites(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend.name, func(b *testing.B) {
			db := backend.open(b)
			links, passkeys := NewLinkTokenStore(db), NewPasskeyStore(db)
			ctx := b.Context()
			u := createBenchUser(b, db)
			b.Run("link_issue_use", func(b *testing.B) {
				for b.Loop() {
					now := time.Now()
					hash := issueBenchLink(b, links, u, domain.LinkVerifyEmail, now)
					if _, err := links.Use(ctx, hash, domain.LinkVerifyEmail, now); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("ceremony_create_take", func(b *testing.B) {
				for b.Loop() {
					now := time.Now()
					c := domain.PasskeyCeremony{ID: randomHex(b), Purpose: domain.CeremonyLogin, State: []byte(`{}`),
						CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
					if err := passkeys.CreateCeremony(ctx, c); err != nil {
						b.Fatal(err)
					}
					if _, err := passkeys.TakeCeremony(ctx, c.ID, domain.CeremonyLogin, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
