package gormstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// grantRow mirrors the oauth_grants table (migration 19); Scopes is a
// JSON list.
type grantRow struct {
	UserID        string `gorm:"column:user_id;primaryKey"`
	ClientID      string `gorm:"column:client_id;primaryKey"`
	Scopes        string `gorm:"column:scopes"`
	CreatedMicros int64  `gorm:"column:created_at"`
	UpdatedMicros int64  `gorm:"column:updated_at"`
}

func (grantRow) TableName() string { return "oauth_grants" }

func toDomainGrant(r grantRow) (domain.Grant, error) {
	scopes, err := fromJSONList[domain.OAuthScope]("oauth_grants.scopes", r.Scopes)
	if err != nil {
		return domain.Grant{}, fmt.Errorf("grant of %s to %s: %w", r.UserID, r.ClientID, err)
	}
	return domain.Grant{
		UserID:    domain.UserID(r.UserID),
		ClientID:  domain.OAuthClientID(r.ClientID),
		Scopes:    scopes,
		CreatedAt: fromMicros(r.CreatedMicros),
		UpdatedAt: fromMicros(r.UpdatedMicros),
	}, nil
}

// GrantStore is the SQL ports.GrantStore.
type GrantStore struct{ db *DB }

var _ ports.GrantStore = (*GrantStore)(nil)

// NewGrantStore returns the grant store of db.
func NewGrantStore(db *DB) *GrantStore { return &GrantStore{db: db} }

// Grant implements ports.GrantStore.
func (s *GrantStore) Grant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) (domain.Grant, error) {
	var row grantRow
	err := s.db.reader(ctx).Where("user_id = ? AND client_id = ?", string(user), string(client)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Grant{}, fmt.Errorf("grant: %w", domain.ErrGrantNotFound)
	}
	if err != nil {
		return domain.Grant{}, storeError("grant", err)
	}
	return toDomainGrant(row)
}

// The upsert of PutGrant: a grant there is keeps its created_at. MySQL
// has its own syntax (VALUES() names the row that was to be inserted).
// Arguments: user_id, client_id, scopes, created_at, updated_at.
const (
	putGrantSQL = `INSERT INTO oauth_grants (user_id, client_id, scopes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (user_id, client_id) DO UPDATE SET scopes = excluded.scopes, updated_at = excluded.updated_at`
	mysqlPutGrantSQL = `INSERT INTO oauth_grants (user_id, client_id, scopes, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE scopes = VALUES(scopes), updated_at = VALUES(updated_at)`
)

// PutGrant implements ports.GrantStore in one statement. It returns
// domain.ErrOAuthClientNotFound when the client does not exist, else
// domain.ErrUserNotFound when the user does not.
func (s *GrantStore) PutGrant(ctx context.Context, g domain.Grant) error {
	q := putGrantSQL
	if s.db.dialect == dialectMySQL {
		q = mysqlPutGrantSQL
	}
	err := s.db.statement(ctx, func(tx *gorm.DB) error {
		return tx.Exec(q, string(g.UserID), string(g.ClientID), jsonList(g.Scopes),
			toMicros(g.CreatedAt), toMicros(g.UpdatedAt)).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		// The violation does not say which key; a read does.
		var n int64
		if cerr := s.db.reader(ctx).Model(&oauthClientRow{}).Where("id = ?", string(g.ClientID)).Count(&n).Error; cerr != nil {
			return storeError("put grant", cerr)
		}
		if n == 0 {
			return fmt.Errorf("put grant: %w", domain.ErrOAuthClientNotFound)
		}
		return fmt.Errorf("put grant: %w", domain.ErrUserNotFound)
	}
	return storeError("put grant", err)
}

// Grants implements ports.GrantStore. The order is the domain's (oldest
// first, then by client id), made here: the ids' collation differs
// between dialects.
func (s *GrantStore) Grants(ctx context.Context, user domain.UserID) ([]domain.Grant, error) {
	var rows []grantRow
	if err := s.db.reader(ctx).Where("user_id = ?", string(user)).Find(&rows).Error; err != nil {
		return nil, storeError("list grants", err)
	}
	out := make([]domain.Grant, len(rows))
	for i, row := range rows {
		g, err := toDomainGrant(row)
		if err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		out[i] = g
	}
	slices.SortFunc(out, compareGrants)
	return out, nil
}

// compareGrants orders grants oldest first, then by client id.
func compareGrants(a, b domain.Grant) int {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ClientID, b.ClientID))
}

// DeleteGrant implements ports.GrantStore.
func (s *GrantStore) DeleteGrant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) error {
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Where("user_id = ? AND client_id = ?", string(user), string(client)).Delete(&grantRow{})
		affected = res.RowsAffected
		return res.Error
	})
	if err == nil && affected == 0 {
		return fmt.Errorf("delete grant: %w", domain.ErrGrantNotFound)
	}
	return storeError("delete grant", err)
}
