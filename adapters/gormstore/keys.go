package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyStore is the SQL ports.KeyStore.
type KeyStore struct{ db *DB }

var _ ports.KeyStore = (*KeyStore)(nil)

// NewKeyStore returns the key store of db.
func NewKeyStore(db *DB) *KeyStore { return &KeyStore{db: db} }

// Keys implements ports.KeyStore.
func (s *KeyStore) Keys(ctx context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error) {
	var rows []keyRow
	err := s.db.read.WithContext(ctx).Where("purpose = ?", string(purpose)).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, storeError("keys", err)
	}
	out := make([]domain.SigningKey, len(rows))
	for i, row := range rows {
		out[i] = toDomainKey(row)
	}
	return out, nil
}

// AddKey implements ports.KeyStore. An id that exists already is an error.
func (s *KeyStore) AddKey(ctx context.Context, k domain.SigningKey) error {
	row := fromDomainKey(k)
	err := s.db.gorm.WithContext(ctx).Create(&row).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fmt.Errorf("add key %q: %w", k.ID, domain.ErrKeyExists)
	}
	return storeError("add key "+k.ID, err)
}
