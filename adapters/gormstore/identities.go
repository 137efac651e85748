package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// userIdentityRow mirrors the user_identities table.
type userIdentityRow struct {
	Provider       string `gorm:"column:provider;primaryKey"`
	Subject        string `gorm:"column:subject;primaryKey"`
	UserID         string `gorm:"column:user_id"`
	Email          string `gorm:"column:email"`
	LinkedMicros   int64  `gorm:"column:linked_at"`
	LastUsedMicros int64  `gorm:"column:last_used_at"`
}

func (userIdentityRow) TableName() string { return "user_identities" }

// userIdentityColumns are the columns of userIdentityRow, named (see
// keyColumns).
var userIdentityColumns = []string{"provider", "subject", "user_id", "email", "linked_at", "last_used_at"}

func fromDomainUserIdentity(id domain.UserIdentity) userIdentityRow {
	return userIdentityRow{
		Provider: id.Provider, Subject: id.Subject, UserID: string(id.UserID), Email: string(id.Email),
		LinkedMicros: toMicros(id.LinkedAt), LastUsedMicros: toMicros(id.LastUsedAt),
	}
}

func toDomainUserIdentity(r userIdentityRow) domain.UserIdentity {
	return domain.UserIdentity{
		UserID: domain.UserID(r.UserID), Provider: r.Provider, Subject: r.Subject, Email: domain.Email(r.Email),
		LinkedAt: fromMicros(r.LinkedMicros), LastUsedAt: fromMicros(r.LastUsedMicros),
	}
}

// UserIdentityStore is the SQL ports.UserIdentityStore.
type UserIdentityStore struct{ db *DB }

var _ ports.UserIdentityStore = (*UserIdentityStore)(nil)

// NewUserIdentityStore returns the user-identity store of db.
func NewUserIdentityStore(db *DB) *UserIdentityStore { return &UserIdentityStore{db: db} }

// LinkIdentity implements ports.UserIdentityStore in one insert: both
// ways an identity can be taken are unique keys of the table (the primary
// key and (user_id, provider)), so the database refuses either, even to
// two concurrent links, and writes nothing.
func (s *UserIdentityStore) LinkIdentity(ctx context.Context, id domain.UserIdentity) error {
	row := fromDomainUserIdentity(id)
	err := s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("link identity: %w", domain.ErrIdentityTaken)
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		// Either reference may be missing; the error does not say which
		// portably, so ask.
		var n int64
		if cerr := s.db.reader(ctx).Model(&identityProviderRow{}).Where("slug = ?", id.Provider).Count(&n).Error; cerr != nil {
			return storeError("link identity", cerr)
		}
		if n == 0 {
			return fmt.Errorf("link identity: %w", domain.ErrIdentityProviderNotFound)
		}
		return fmt.Errorf("link identity: %w", domain.ErrUserNotFound)
	}
	return storeError("link identity", err)
}

// IdentityBySubject implements ports.UserIdentityStore by the primary
// key.
func (s *UserIdentityStore) IdentityBySubject(ctx context.Context, provider, subject string) (domain.UserIdentity, error) {
	var row userIdentityRow
	err := s.db.reader(ctx).Select(userIdentityColumns).Where("provider = ? AND subject = ?", provider, subject).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.UserIdentity{}, fmt.Errorf("identity by subject: %w", domain.ErrIdentityNotFound)
	}
	if err != nil {
		return domain.UserIdentity{}, storeError("identity by subject", err)
	}
	return toDomainUserIdentity(row), nil
}

// Identities implements ports.UserIdentityStore: oldest first, the
// provider breaking ties (a user has one identity of each).
func (s *UserIdentityStore) Identities(ctx context.Context, user domain.UserID) ([]domain.UserIdentity, error) {
	var rows []userIdentityRow
	err := s.db.reader(ctx).Select(userIdentityColumns).Where("user_id = ?", string(user)).Order("linked_at, provider").Find(&rows).Error
	if err != nil {
		return nil, storeError("identities", err)
	}
	out := make([]domain.UserIdentity, len(rows))
	for i, row := range rows {
		out[i] = toDomainUserIdentity(row)
	}
	return out, nil
}

// UnlinkIdentity implements ports.UserIdentityStore.
func (s *UserIdentityStore) UnlinkIdentity(ctx context.Context, user domain.UserID, provider string) error {
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Where("user_id = ? AND provider = ?", string(user), provider).Delete(&userIdentityRow{})
		affected = res.RowsAffected
		return res.Error
	})
	if err == nil && affected != 1 {
		return fmt.Errorf("unlink identity: %w", domain.ErrIdentityNotFound)
	}
	return storeError("unlink identity", err)
}

// TouchIdentity implements ports.UserIdentityStore. It does not look at
// the rows it changed: an unknown identity is no error, and MySQL counts
// a row written with the values it had as unchanged anyway.
func (s *UserIdentityStore) TouchIdentity(ctx context.Context, provider, subject string, email domain.Email, at time.Time) error {
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		return g.Model(&userIdentityRow{}).Where("provider = ? AND subject = ?", provider, subject).
			Updates(map[string]any{"email": string(email), "last_used_at": toMicros(at)}).Error
	})
	return storeError("touch identity", err)
}
