package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// personalTokenRow mirrors the personal_tokens table. Scopes is a JSON
// array of strings (migration 22); LastUsedMicros is 0 for a token never
// used.
type personalTokenRow struct {
	ID             string `gorm:"column:id;primaryKey"`
	UserID         string `gorm:"column:user_id"`
	Name           string `gorm:"column:name"`
	Scopes         string `gorm:"column:scopes"`
	Hash           string `gorm:"column:hash"`
	Prefix         string `gorm:"column:prefix"`
	CreatedMicros  int64  `gorm:"column:created_at"`
	ExpiresMicros  int64  `gorm:"column:expires_at"`
	LastUsedMicros int64  `gorm:"column:last_used_at"`
	RevokedMicros  *int64 `gorm:"column:revoked_at"`
}

func (personalTokenRow) TableName() string { return "personal_tokens" }

// personalTokenColumns are the columns of personalTokenRow, named (see
// keyColumns).
var personalTokenColumns = []string{"id", "user_id", "name", "scopes", "hash", "prefix",
	"created_at", "expires_at", "last_used_at", "revoked_at"}

// scanTargets are the fields of r in personalTokenColumns order (see
// userRow.scanTargets).
func (r *personalTokenRow) scanTargets() []any {
	return []any{&r.ID, &r.UserID, &r.Name, &r.Scopes, &r.Hash, &r.Prefix,
		&r.CreatedMicros, &r.ExpiresMicros, &r.LastUsedMicros, &r.RevokedMicros}
}

func fromDomainPersonalToken(t domain.PersonalToken) personalTokenRow {
	return personalTokenRow{
		ID: string(t.ID), UserID: string(t.UserID), Name: t.Name, Scopes: jsonList(t.Scopes),
		Hash: t.Hash, Prefix: t.Prefix, CreatedMicros: toMicros(t.CreatedAt), ExpiresMicros: toMicros(t.ExpiresAt),
		LastUsedMicros: microsOrZero(t.LastUsedAt), RevokedMicros: toMicrosPtr(t.RevokedAt),
	}
}

func toDomainPersonalToken(r personalTokenRow) (domain.PersonalToken, error) {
	scopes, err := fromJSONList[domain.TokenScope]("personal_tokens.scopes", r.Scopes)
	if err != nil {
		return domain.PersonalToken{}, fmt.Errorf("personal token %s: %w", r.ID, err)
	}
	return domain.PersonalToken{
		ID: domain.PersonalTokenID(r.ID), UserID: domain.UserID(r.UserID), Name: r.Name, Scopes: scopes,
		Hash: r.Hash, Prefix: r.Prefix, CreatedAt: fromMicros(r.CreatedMicros), ExpiresAt: fromMicros(r.ExpiresMicros),
		LastUsedAt: timeOrZero(r.LastUsedMicros), RevokedAt: fromMicrosPtr(r.RevokedMicros),
	}, nil
}

// microsOrZero is t for a time column where 0 means none: 0 for the zero
// time, which toMicros would store as a large negative number.
func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return toMicros(t)
}

// timeOrZero reads a column of microsOrZero.
func timeOrZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

// PersonalTokenStore is the SQL ports.PersonalTokenStore.
type PersonalTokenStore struct{ db *DB }

var _ ports.PersonalTokenStore = (*PersonalTokenStore)(nil)

// NewPersonalTokenStore returns the personal-token store of db.
func NewPersonalTokenStore(db *DB) *PersonalTokenStore { return &PersonalTokenStore{db: db} }

// whereLive is the condition of a live token at a time (its argument,
// microseconds): domain.PersonalToken.Live.
const whereLive = "revoked_at IS NULL AND expires_at > ?"

// CreateToken implements ports.PersonalTokenStore in one transaction:
// the user's row is read first, locked on PostgreSQL and MySQL (SQLite's
// immediate transaction has serialised the writers already), so that the
// creations of one user queue on it and each counts the live tokens after
// the one before committed; then the count, then the insert.
func (s *PersonalTokenStore) CreateToken(ctx context.Context, t domain.PersonalToken, limit int) error {
	row := fromDomainPersonalToken(t)
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		var user userRow
		if err := s.db.dialect.forUpdate(tx).Select("id").Where("id = ?", row.UserID).Take(&user).Error; err != nil {
			return err
		}
		var live int64
		err := tx.Model(&personalTokenRow{}).Where("user_id = ? AND "+whereLive, row.UserID, row.CreatedMicros).Count(&live).Error
		if err != nil {
			return err
		}
		if live >= int64(limit) {
			return domain.ErrTokenLimit
		}
		return tx.Create(&row).Error
	})
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("create personal token: %w", domain.ErrUserNotFound)
	case errors.Is(err, domain.ErrTokenLimit):
		return fmt.Errorf("create personal token: %w", domain.ErrTokenLimit)
	}
	return storeError("create personal token", err)
}

// Tokens implements ports.PersonalTokenStore: newest first, the id
// breaking ties, as the memory store does.
func (s *PersonalTokenStore) Tokens(ctx context.Context, user domain.UserID, now time.Time) ([]domain.PersonalToken, error) {
	var rows []personalTokenRow
	err := s.db.reader(ctx).Select(personalTokenColumns).Where("user_id = ? AND "+whereLive, string(user), toMicros(now)).
		Order("created_at DESC, id DESC").Find(&rows).Error
	if err != nil {
		return nil, storeError("personal tokens", err)
	}
	out := make([]domain.PersonalToken, len(rows))
	for i, row := range rows {
		t, err := toDomainPersonalToken(row)
		if err != nil {
			return nil, fmt.Errorf("personal tokens: %w", err)
		}
		out[i] = t
	}
	return out, nil
}

// tokenByHashSelect reads a token and its user by the token's hash, in
// one join: the columns of personalTokenColumns, then those of
// userColumns. The hash's placeholder is left to add.
var tokenByHashSelect = "SELECT t." + strings.Join(personalTokenColumns, ", t.") + ", u." + strings.Join(userColumns, ", u.") +
	" FROM personal_tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = "

// tokenByHashQuery is TokenByHash's statement on the read pool (hotStatement):
// every request with a token makes it, as every signed-in one makes
// ByID's.
func tokenByHashQuery(d dialect) string { return tokenByHashSelect + d.param(1) }

// TokenByHash implements ports.PersonalTokenStore with tokenByHashSelect:
// outside a transaction its prepared statement on the read pool, inside
// one the same query on the transaction; scanned by database/sql either
// way.
func (s *PersonalTokenStore) TokenByHash(ctx context.Context, hash string) (domain.PersonalToken, domain.User, error) {
	var (
		tok  personalTokenRow
		user userRow
	)
	err := s.readTokenByHash(ctx, hash, append(tok.scanTargets(), user.scanTargets()...))
	if errors.Is(err, sql.ErrNoRows) {
		return domain.PersonalToken{}, domain.User{}, fmt.Errorf("personal token by hash: %w", domain.ErrPersonalTokenNotFound)
	}
	if err != nil {
		return domain.PersonalToken{}, domain.User{}, storeError("personal token by hash", err)
	}
	t, err := toDomainPersonalToken(tok)
	if err != nil {
		return domain.PersonalToken{}, domain.User{}, fmt.Errorf("personal token by hash: %w", err)
	}
	return t, toDomainUser(user), nil
}

// readTokenByHash scans the row of tokenByHashQuery into targets.
func (s *PersonalTokenStore) readTokenByHash(ctx context.Context, hash string, targets []any) error {
	if s.db.txOf(ctx) != nil {
		// GORM writes each dialect's placeholder for ? itself.
		return s.db.reader(ctx).Raw(tokenByHashSelect+"?", hash).Row().Scan(targets...)
	}
	return s.db.queryRow(ctx, &s.db.tokenByHash, targets, hash)
}

// RevokeToken implements ports.PersonalTokenStore in one conditional
// UPDATE: only the user's token, only while it is live at at, so that of
// two revocations one wins and the other finds nothing.
func (s *PersonalTokenStore) RevokeToken(ctx context.Context, user domain.UserID, id domain.PersonalTokenID, at time.Time) error {
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Model(&personalTokenRow{}).Where("id = ? AND user_id = ? AND "+whereLive, string(id), string(user), toMicros(at)).
			Update("revoked_at", toMicros(at))
		affected = res.RowsAffected
		return res.Error
	})
	if err == nil && affected != 1 {
		return fmt.Errorf("revoke personal token: %w", domain.ErrPersonalTokenNotFound)
	}
	return storeError("revoke personal token", err)
}

// TouchToken implements ports.PersonalTokenStore in one conditional
// UPDATE, which writes nothing when the last use is recent enough: the
// uses of a busy token cost a write a minute, not one each. It does not
// look at the rows it changed (an unknown token is no error).
func (s *PersonalTokenStore) TouchToken(ctx context.Context, id domain.PersonalTokenID, at time.Time) error {
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		return g.Model(&personalTokenRow{}).
			Where("id = ? AND last_used_at < ?", string(id), toMicros(at.Add(-domain.PersonalTokenTouchInterval))).
			Update("last_used_at", toMicros(at)).Error
	})
	return storeError("touch personal token", err)
}
