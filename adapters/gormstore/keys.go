package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStore is the SQL ports.KeyStore. Secrets are sealed by its SecretBox
// with the row's id as associated data, and the row's sealed column says
// so. Rows written before secrets were sealed hold them in clear with
// sealed false: SealClear seals them, and until then Keys refuses them.
type KeyStore struct {
	db  *DB
	box ports.SecretBox
}

var _ ports.KeyStore = (*KeyStore)(nil)

// keyColumns are the columns of keyRow, named rather than SELECT *: on
// SQLite, the first SELECT * on a connection opened before a migration
// added a column (the read pool opens before Migrate; another node may
// migrate) yields the old column list, and sealed would read as false, so
// that a sealed secret would pass for a clear one. A named column that the
// connection's schema lacks makes SQLite reload its schema instead.
var keyColumns = []string{"id", "purpose", "algorithm", "secret", "created_at", "sealed"}

// NewKeyStore returns the key store of db, sealing and opening secrets
// with box.
func NewKeyStore(db *DB, box ports.SecretBox) *KeyStore { return &KeyStore{db: db, box: box} }

// Keys implements ports.KeyStore: every secret is opened on the way out. A
// secret that does not open (sealed under a secret key the box lacks,
// altered, moved from another row, or still in clear) fails the whole
// read with the box's error, naming the key's id.
func (s *KeyStore) Keys(ctx context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error) {
	var rows []keyRow
	err := s.db.reader(ctx).Select(keyColumns).Where("purpose = ?", string(purpose)).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, storeError("keys", err)
	}
	out := make([]domain.SigningKey, len(rows))
	for i, row := range rows {
		secret, err := s.open(row)
		if err != nil {
			return nil, err
		}
		out[i] = toDomainKey(row, secret)
	}
	return out, nil
}

// AddKey implements ports.KeyStore: the secret is sealed before it is
// stored. An id that exists already is an error.
func (s *KeyStore) AddKey(ctx context.Context, k domain.SigningKey) error {
	sealed, err := s.box.Seal(k.Secret, []byte(k.ID))
	if err != nil {
		return fmt.Errorf("add key %q: %w", k.ID, err)
	}
	row := fromDomainKey(k, sealed)
	err = s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("add key %q: %w", k.ID, domain.ErrKeyExists)
	}
	return storeError("add key "+k.ID, err)
}

// open returns the secret of row in clear.
func (s *KeyStore) open(row keyRow) ([]byte, error) {
	if !row.Sealed {
		return nil, fmt.Errorf("key %q: %w: stored in clear, not sealed yet (the start seals such keys)", row.ID, domain.ErrSecretInvalid)
	}
	secret, err := s.box.Open(row.Secret, []byte(row.ID))
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", row.ID, err)
	}
	return secret, nil
}

// SealClear seals every secret stored in clear (rows written before
// secrets were sealed) under the box's current key, all in one
// transaction, and returns how many it sealed. It also opens every secret
// sealed already, so that a missing or wrong secret key fails here, at
// start, with the box's error (domain.ErrSecretKeyUnknown,
// domain.ErrSecretInvalid), before anything uses the keys. The key bytes
// are not changed, only how they are stored. Nodes starting together seal
// each row once: on PostgreSQL the rows are read FOR UPDATE, on SQLite the
// transaction holds the write lock.
func (s *KeyStore) SealClear(ctx context.Context) (int, error) {
	return s.reseal(ctx, "seal clear keys", false)
}

// Reencrypt rewrites every secret that is not sealed under the box's
// current key (sealed under an older one, or in clear) so that it is, all
// in one transaction, and returns how many rows it changed: after it, the
// older secret keys can be dropped. A secret that does not open fails the
// whole and changes nothing.
func (s *KeyStore) Reencrypt(ctx context.Context) (int, error) {
	return s.reseal(ctx, "re-encrypt keys", true)
}

// reseal does SealClear, or with all Reencrypt. On SQLite, the values it
// replaces must not stay in the file: a secret sealed in place of a
// shorter clear one goes to a new cell, and the old cell's bytes would
// remain in the page's free space, where a copy of the file finds the key
// in clear. secure_delete zeroes freed space while the transaction runs,
// and a checkpoint then writes the zeroed pages over the database file
// (should a reader hold it back, the next checkpoint does).
func (s *KeyStore) reseal(ctx context.Context, op string, all bool) (int, error) {
	changed := 0
	err := s.db.transaction(ctx, func(tx *gorm.DB) (err error) {
		changed = 0 // the transaction may run again (see transaction)
		if s.db.dialect == dialectSQLite {
			restore, err := secureDelete(tx)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, restore()) }()
		}
		read := tx
		if s.db.dialect.rowLocks() {
			read = read.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var rows []keyRow
		if err := read.Select(keyColumns).Order("id").Find(&rows).Error; err != nil {
			return err
		}
		for _, row := range rows {
			var secret []byte
			if row.Sealed {
				var err error
				if secret, err = s.open(row); err != nil {
					return err
				}
				if !all || s.box.Current(row.Secret) {
					continue
				}
			} else {
				secret = row.Secret
			}
			sealed, err := s.box.Seal(secret, []byte(row.ID))
			if err != nil {
				return fmt.Errorf("key %q: %w", row.ID, err)
			}
			res := tx.Model(&keyRow{}).Where("id = ? AND sealed = ?", row.ID, row.Sealed).
				Updates(map[string]any{"secret": sealed, "sealed": true})
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return fmt.Errorf("key %q changed while it was sealed", row.ID)
			}
			changed++
		}
		return nil
	})
	return s.db.resealed(ctx, op, changed, err)
}

// Checkpoint writes SQLite's write-ahead log over the database file and
// empties it, so that what a re-encryption overwrote (zeroed by
// secure_delete in the log) leaves the file too; it does nothing on
// PostgreSQL and MySQL. Re-encryptions run outside a transaction checkpoint
// themselves; a caller that runs several in one transaction calls it once
// the transaction has committed.
func (db *DB) Checkpoint(ctx context.Context) error {
	if db.dialect != dialectSQLite {
		return nil
	}
	// Scanned, not Exec'd: these pragmas answer a row, and a prepared
	// statement left on its row would keep the next commit from
	// completing.
	var result struct{ Busy, Log, Checkpointed int }
	return storeError("checkpoint", db.gorm.WithContext(ctx).Raw("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&result).Error)
}

// checkpointOutsideTx is Checkpoint, unless ctx is inside a transaction,
// whose commit the checkpoint must wait for: SQLite's automatic
// checkpoints, or the caller's Checkpoint, do it then.
func (db *DB) checkpointOutsideTx(ctx context.Context) error {
	if db.txOf(ctx) != nil {
		return nil
	}
	return db.Checkpoint(ctx)
}

// secureDelete turns SQLite's secure_delete on for tx's connection and
// returns what turns it back to what it was.
func secureDelete(tx *gorm.DB) (restore func() error, err error) {
	var was, now int
	if err := tx.Raw("PRAGMA secure_delete").Scan(&was).Error; err != nil {
		return nil, err
	}
	if err := tx.Raw("PRAGMA secure_delete = 1").Scan(&now).Error; err != nil {
		return nil, err
	}
	return func() error { return tx.Raw(fmt.Sprintf("PRAGMA secure_delete = %d", was)).Scan(&now).Error }, nil
}

// resealed ends a re-sealing of op that changed changed rows in a
// transaction that returned err: errors of the secret key keep their
// words for the operator, and a SQLite file whose rows changed is
// checkpointed, so that the old sealed values leave it.
func (db *DB) resealed(ctx context.Context, op string, changed int, err error) (int, error) {
	if err != nil {
		if errors.Is(err, domain.ErrSecretInvalid) || errors.Is(err, domain.ErrSecretKeyUnknown) || errors.Is(err, domain.ErrSecretKeyMissing) {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
		return 0, storeError(op, err)
	}
	if changed > 0 {
		if err := db.checkpointOutsideTx(ctx); err != nil {
			return 0, fmt.Errorf("%s: %w", op, err)
		}
	}
	return changed, nil
}
