package gormstore

import (
	"fmt"
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
					if _, err := repo.List(ctx, ports.UserListQuery{Limit: 51}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
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
