package gormstore

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
)

// More TOTP secrets than reseal reads at a time: Reencrypt re-seals every
// one, across its batches, each once, and a secret that does not open in
// the last batch leaves the earlier ones as they were.
func TestReseal_Batches(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			ctx := t.Context()
			db := b.open(t)
			oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
			n := 2*resealBatch + 1
			users := make([]domain.User, n)
			for i := range users {
				users[i] = benchUser(i)
				// Ids in order, so that the last one is the last read.
				users[i].ID = domain.UserID(fmt.Sprintf("u-%05d", i))
			}
			if err := NewUserRepository(db).CreateMany(ctx, users); err != nil {
				t.Fatal(err)
			}
			secret := func(i int) []byte { return []byte(fmt.Sprintf("totp secret %05d", i)) }
			old := NewMFAStore(db, newTestBox(t, oldKey))
			for i, u := range users {
				if err := old.PutTOTP(ctx, domain.TOTPFactor{UserID: u.ID, Secret: secret(i), CreatedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
			}

			// The last secret sealed under a key the box lacks.
			last := users[n-1].ID
			if err := NewMFAStore(db, newTestBox(t)).PutTOTP(ctx, domain.TOTPFactor{UserID: last, Secret: secret(n - 1), CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			both := NewMFAStore(db, newTestBox(t, newKey, oldKey))
			if got, err := both.Reencrypt(ctx); !errors.Is(err, domain.ErrSecretKeyUnknown) || got != 0 {
				t.Fatalf("Reencrypt with a secret that does not open = %d, %v; want domain.ErrSecretKeyUnknown", got, err)
			}
			if _, err := old.TOTP(ctx, users[0].ID); err != nil {
				t.Errorf("the first secret after a failed Reencrypt: %v; want it sealed under the old key still", err)
			}

			if err := old.PutTOTP(ctx, domain.TOTPFactor{UserID: last, Secret: secret(n - 1), CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if got, err := both.Reencrypt(ctx); err != nil || got != n {
				t.Fatalf("Reencrypt = %d, %v; want all %d secrets", got, err, n)
			}
			if got, err := both.Reencrypt(ctx); err != nil || got != 0 {
				t.Errorf("second Reencrypt = %d, %v; want nothing left to do", got, err)
			}
			current := NewMFAStore(db, newTestBox(t, newKey))
			for i, u := range users {
				f, err := current.TOTP(ctx, u.ID)
				if err != nil || !bytes.Equal(f.Secret, secret(i)) {
					t.Fatalf("TOTP(%s) under the new key only = %q, %v; want %q", u.ID, f.Secret, err, secret(i))
				}
			}
		})
	}
}
