package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// sealedColumn is a column of secrets sealed by a ports.SecretBox with
// their row's key as associated data, so that a secret copied to another
// row does not open.
type sealedColumn struct {
	table, key, secret string
	// flag is the boolean column that says secret is sealed, in a table
	// whose rows written before secrets were sealed hold it in clear; ""
	// where every row's secret is sealed.
	flag string
	// row names a row in errors: a format of one verb, for its key.
	row string
	// ad, when set, makes the associated data of a row from its key; nil
	// uses the key itself.
	ad func(key string) []byte
}

// associated returns the associated data the secret of key's row is
// sealed with.
func (c sealedColumn) associated(key string) []byte {
	if c.ad != nil {
		return c.ad(key)
	}
	return []byte(key)
}

// The sealed columns that reseal rewrites. Outbox payloads are sealed too,
// but live minutes, not years: they are not re-sealed.
var (
	// keySecrets are the token-signing keys and the refresh-token HMAC
	// key.
	keySecrets = sealedColumn{table: "keys", key: "id", secret: "secret", flag: "sealed", row: "key %q"}
	// totpSecrets are the users' TOTP secrets.
	totpSecrets = sealedColumn{table: "totp_factors", key: "user_id", secret: "secret", row: "totp secret of %s"}
	// providerSecrets are the identity providers' client secrets, bound
	// to their purpose as well as their slug (providerSecretAD).
	providerSecrets = sealedColumn{table: "identity_providers", key: "slug", secret: "client_secret",
		row: "client secret of identity provider %s", ad: providerSecretAD}
)

// name names the row of key in an error.
func (c sealedColumn) name(key string) string { return fmt.Sprintf(c.row, key) }

// resealBatch is how many rows reseal reads at a time: a table of many
// TOTP secrets is not held in memory at once.
const resealBatch = 500

// sealedValue is a row of a sealedColumn: its key, its secret and whether
// the secret is sealed.
type sealedValue struct {
	key    string
	secret []byte
	sealed bool
}

// reseal seals under box's current key every secret of col stored in
// clear, and with all every secret sealed under an older key too, and
// returns how many rows it changed: the secrets do not change, only how
// they are stored. It opens every sealed secret on the way, so that a
// missing or wrong secret key fails the whole with the box's error
// (domain.ErrSecretKeyUnknown, domain.ErrSecretInvalid), changing
// nothing. All runs in one transaction (a savepoint of ctx's), which
// reads the rows in key order, resealBatch at a time, locked where the
// dialect needs it (rowLocks): nodes doing it together change each row
// once; on SQLite the transaction holds the write lock. op names the work
// in errors.
//
// On SQLite, the values it replaces must not stay in the file: a secret
// sealed in place of a shorter clear one goes to a new cell, and the old
// cell's bytes would remain in the page's free space, where a copy of the
// file finds the key in clear. secure_delete zeroes freed space while the
// transaction runs, and a checkpoint then writes the zeroed pages over
// the database file (should a reader hold it back, the next checkpoint
// does).
func (db *DB) reseal(ctx context.Context, op string, col sealedColumn, box ports.SecretBox, all bool) (int, error) {
	changed := 0
	err := db.transaction(ctx, func(tx *gorm.DB) (err error) {
		changed = 0 // the transaction may run again (see transaction)
		if db.dialect == dialectSQLite {
			restore, err := secureDelete(tx)
			if err != nil {
				return err
			}
			defer func() { err = errors.Join(err, restore()) }()
		}
		var after *string
		for {
			batch, err := db.readSealed(tx, col, after)
			if err != nil {
				return err
			}
			for _, v := range batch {
				done, err := resealOne(tx, col, box, all, v)
				if err != nil {
					return err
				}
				if done {
					changed++
				}
			}
			if len(batch) < resealBatch {
				return nil
			}
			after = &batch[len(batch)-1].key
		}
	})
	return db.resealed(ctx, op, changed, err)
}

// readSealed reads in tx the next batch of col's rows, in key order:
// those after the key after, or the first ones when after is nil. The
// columns are named (see keyColumns).
func (db *DB) readSealed(tx *gorm.DB, col sealedColumn, after *string) ([]sealedValue, error) {
	columns := []string{col.key, col.secret}
	if col.flag != "" {
		columns = append(columns, col.flag)
	}
	read := db.dialect.forUpdate(tx.Table(col.table)).Select(columns).Order(col.key).Limit(resealBatch)
	if after != nil {
		read = read.Where(col.key+" > ?", *after)
	}
	rows, err := read.Rows()
	if err != nil {
		return nil, err
	}
	// rows.Err, returned below, reports a failure while reading; Close
	// after the last row has nothing to add.
	defer func() { _ = rows.Close() }()
	var batch []sealedValue
	for rows.Next() {
		v := sealedValue{sealed: col.flag == ""}
		dest := []any{&v.key, &v.secret}
		if col.flag != "" {
			dest = append(dest, &v.sealed)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		batch = append(batch, v)
	}
	return batch, rows.Err()
}

// resealOne seals v's secret anew in tx when it must be (in clear, or
// with all sealed under an older key) and reports whether it did. The
// update is conditional on the row still being as read.
func resealOne(tx *gorm.DB, col sealedColumn, box ports.SecretBox, all bool, v sealedValue) (bool, error) {
	secret := v.secret
	if v.sealed {
		opened, err := box.Open(v.secret, col.associated(v.key))
		if err != nil {
			return false, fmt.Errorf("%s: %w", col.name(v.key), err)
		}
		if !all || box.Current(v.secret) {
			return false, nil
		}
		secret = opened
	}
	sealed, err := box.Seal(secret, col.associated(v.key))
	if err != nil {
		return false, fmt.Errorf("%s: %w", col.name(v.key), err)
	}
	set := map[string]any{col.secret: sealed}
	update := tx.Table(col.table).Where(col.key+" = ?", v.key)
	if col.flag != "" {
		set[col.flag] = true
		update = update.Where(col.flag+" = ?", v.sealed)
	}
	res := update.Updates(set)
	if res.Error != nil {
		return false, res.Error
	}
	if res.RowsAffected != 1 {
		return false, fmt.Errorf("%s changed while it was re-sealed", col.name(v.key))
	}
	return true, nil
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
