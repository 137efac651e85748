package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

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
	return s.db.reseal(ctx, "seal clear keys", keySecrets, s.box, false)
}

// Reencrypt rewrites every secret that is not sealed under the box's
// current key (sealed under an older one, or in clear) so that it is, all
// in one transaction, and returns how many rows it changed: after it, the
// older secret keys can be dropped. A secret that does not open fails the
// whole and changes nothing.
func (s *KeyStore) Reencrypt(ctx context.Context) (int, error) {
	return s.db.reseal(ctx, "re-encrypt keys", keySecrets, s.box, true)
}
