package gormstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newTestBox returns a secret box over a random key.
func newTestBox(t testing.TB, keys ...[]byte) *secretbox.Box {
	t.Helper()
	if len(keys) == 0 {
		keys = [][]byte{secretbox.NewKey()}
	}
	b, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSealed checks that the rows of want (as the fixture holds them, in
// clear) are now sealed under box: their stored bytes hold no part of the
// clear secret, and they open to it.
func checkSealed(t *testing.T, db *DB, box ports.SecretBox, want []keyRow) {
	t.Helper()
	for _, w := range want {
		var row keyRow
		if err := db.gorm.Where("id = ?", w.ID).Take(&row).Error; err != nil {
			t.Fatalf("read key %s: %v", w.ID, err)
		}
		if !row.Sealed || !box.Current(row.Secret) {
			t.Errorf("key %s: sealed = %v, current = %v; want sealed under the current key", w.ID, row.Sealed, box.Current(row.Secret))
		}
		// The last 16 bytes: the private scalar's end, or the HMAC key's.
		if bytes.Contains(row.Secret, w.Secret[len(w.Secret)-16:]) {
			t.Errorf("key %s: the stored value holds the secret in clear", w.ID)
		}
		got, err := box.Open(row.Secret, []byte(w.ID))
		if err != nil || !bytes.Equal(got, w.Secret) {
			t.Errorf("key %s opens to %x, %v; want the secret it had in clear, %x", w.ID, got, err, w.Secret)
		}
		if row.Purpose != w.Purpose || row.Algorithm != w.Algorithm || row.CreatedMicros != w.CreatedMicros {
			t.Errorf("key %s = %s, want only its secret and sealed changed from %s", w.ID, showRow(row), showRow(w))
		}
	}
}

// Rows in clear, as a database upgraded from an earlier version holds
// them: Keys refuses them until SealClear has sealed them, nodes starting
// together seal each once, and the secrets keep their bytes.
func TestKeyStore_SealClear(t *testing.T) {
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
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			want := legacyFixtures[b.name].rows.Keys
			box := newTestBox(t)
			if _, err := NewKeyStore(db, box).Keys(ctx, domain.KeyPurposeAccessToken); !errors.Is(err, domain.ErrSecretInvalid) {
				t.Errorf("Keys over clear rows = %v, want domain.ErrSecretInvalid", err)
			}

			// Three nodes start together on the upgraded database.
			var wg sync.WaitGroup
			counts, errs := make([]int, 3), make([]error, 3)
			for i := range counts {
				wg.Go(func() {
					node, err := Open(driver, dsn, Options{MaxOpenConns: 2})
					if err != nil {
						errs[i] = err
						return
					}
					defer mustClose(t, node)
					counts[i], errs[i] = NewKeyStore(node, box).SealClear(ctx)
				})
			}
			wg.Wait()
			total := 0
			for i := range counts {
				if errs[i] != nil {
					t.Fatalf("SealClear: %v", errs[i])
				}
				total += counts[i]
			}
			if total != len(want) {
				t.Errorf("the nodes sealed %v keys, %d in all; want each of the %d once", counts, total, len(want))
			}
			checkSealed(t, db, box, want)
			if driver == DriverSQLite {
				checkFileHoldsNoSecret(t, dsn, want)
			}
			store := NewKeyStore(db, box)
			got, err := store.Keys(ctx, domain.KeyPurposeRefreshHMAC)
			if err != nil || len(got) != 1 || !bytes.Equal(got[0].Secret, want[2].Secret) {
				t.Errorf("refresh key after sealing = %+v, %v; want the fixture's bytes", got, err)
			}
			if n, err := store.SealClear(ctx); err != nil || n != 0 {
				t.Errorf("SealClear again = %d, %v; want nothing to do", n, err)
			}

			// Started with another key, the start fails and says why.
			if _, err := NewKeyStore(db, newTestBox(t)).SealClear(ctx); !errors.Is(err, domain.ErrSecretKeyUnknown) {
				t.Errorf("SealClear with another secret key = %v, want domain.ErrSecretKeyUnknown", err)
			}
		})
	}
}

// Reencrypt seals clear rows as well as re-sealing the others.
func TestKeyStore_Reencrypt_seals_clear_rows(t *testing.T) {
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
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			oldKey, newKey := secretbox.NewKey(), secretbox.NewKey()
			k := domain.SigningKey{ID: "k-new", Purpose: domain.KeyPurposeAccessToken, Algorithm: "ES256",
				Secret: secretbox.NewKey(), CreatedAt: time.Now()}
			if err := NewKeyStore(db, newTestBox(t, oldKey)).AddKey(ctx, k); err != nil {
				t.Fatal(err)
			}
			box := newTestBox(t, newKey, oldKey)
			want := legacyFixtures[b.name].rows.Keys
			if n, err := NewKeyStore(db, box).Reencrypt(ctx); err != nil || n != len(want)+1 {
				t.Fatalf("Reencrypt = %d, %v; want the %d clear keys and the one under the old key", n, err, len(want))
			}
			checkSealed(t, db, box, want)
			only := NewKeyStore(db, newTestBox(t, newKey))
			if got, err := only.Keys(ctx, domain.KeyPurposeAccessToken); err != nil || len(got) != 3 {
				t.Errorf("Keys under the new key alone = %d, %v; want 3", len(got), err)
			}
		})
	}
}

// newTestKey returns an access-token key with a random secret.
func newTestKey(id string) domain.SigningKey {
	return domain.SigningKey{ID: id, Purpose: domain.KeyPurposeAccessToken, Algorithm: "EdDSA",
		Secret: secretbox.NewKey(), CreatedAt: time.Now()}
}

// checkFileHoldsNoSecret checks that the SQLite file at path and its WAL
// hold no part of the clear secrets of want: sealing a row must not leave
// the clear value in the page's free space.
func checkFileHoldsNoSecret(t *testing.T, path string, want []keyRow) {
	t.Helper()
	for _, name := range []string{path, path + "-wal"} {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if bytes.Contains(data, w.Secret[len(w.Secret)-16:]) {
				t.Errorf("%s still holds key %s in clear", filepath.Base(name), w.ID)
			}
		}
	}
}

// Sealing a clear row in place must not leave the clear value in the
// page's free space, where a copy of the file would find it.
func TestKeyStore_SealClear_leaves_no_clear_bytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "userd.db")
	db := openSQLiteDSN(t, path)
	var inClear []keyRow
	for _, id := range []string{"k-1", "k-2", "refresh-hmac-1"} {
		row := keyRow{ID: id, Purpose: string(domain.KeyPurposeAccessToken), Algorithm: "HS256", Secret: secretbox.NewKey(), CreatedMicros: 1}
		if err := db.gorm.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
		inClear = append(inClear, row)
	}
	box := newTestBox(t)
	if n, err := NewKeyStore(db, box).SealClear(t.Context()); err != nil || n != len(inClear) {
		t.Fatalf("SealClear = %d, %v", n, err)
	}
	checkSealed(t, db, box, inClear)
	checkFileHoldsNoSecret(t, path, inClear)
}

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
