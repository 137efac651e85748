package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// linkTokenRow mirrors the link_tokens table.
type linkTokenRow struct {
	Hash          string  `gorm:"column:hash;primaryKey"`
	Purpose       string  `gorm:"column:purpose"`
	UserID        *string `gorm:"column:user_id"`
	Email         string  `gorm:"column:email"`
	CreatedMicros int64   `gorm:"column:created_at"`
	ExpiresMicros int64   `gorm:"column:expires_at"`
	Requested     bool    `gorm:"column:requested"`
	UsedMicros    *int64  `gorm:"column:used_at"`
	CodeHash      string  `gorm:"column:code_hash"`
	CodeFailures  int     `gorm:"column:code_failures"`
}

func (linkTokenRow) TableName() string { return "link_tokens" }

// linkColumns are the columns of linkTokenRow, named (see keyColumns).
const linkColumns = "hash, purpose, user_id, email, created_at, expires_at, requested, used_at, code_hash, code_failures"

func fromDomainLinkToken(t domain.LinkToken) linkTokenRow {
	return linkTokenRow{
		Hash:          t.Hash,
		Purpose:       string(t.Purpose),
		UserID:        nullIfEmpty(string(t.UserID)),
		Email:         string(t.Email),
		CreatedMicros: toMicros(t.CreatedAt),
		ExpiresMicros: toMicros(t.ExpiresAt),
		Requested:     t.Requested,
		UsedMicros:    toMicrosPtr(t.UsedAt),
		CodeHash:      t.CodeHash,
		CodeFailures:  t.CodeFailures,
	}
}

func toDomainLinkToken(r linkTokenRow) domain.LinkToken {
	return domain.LinkToken{
		Hash:         r.Hash,
		Purpose:      domain.LinkPurpose(r.Purpose),
		UserID:       domain.UserID(deref(r.UserID)),
		Email:        domain.Email(r.Email),
		CreatedAt:    fromMicros(r.CreatedMicros),
		ExpiresAt:    fromMicros(r.ExpiresMicros),
		Requested:    r.Requested,
		UsedAt:       fromMicrosPtr(r.UsedMicros),
		CodeHash:     r.CodeHash,
		CodeFailures: r.CodeFailures,
	}
}

// LinkTokenStore is the SQL ports.LinkTokenStore.
type LinkTokenStore struct{ db *DB }

var _ ports.LinkTokenStore = (*LinkTokenStore)(nil)

// NewLinkTokenStore returns the link-token store of db.
func NewLinkTokenStore(db *DB) *LinkTokenStore { return &LinkTokenStore{db: db} }

// Issue implements ports.LinkTokenStore. It returns domain.ErrUserNotFound
// when the token's user does not exist (deleted meanwhile, say): the
// foreign key says so.
func (s *LinkTokenStore) Issue(ctx context.Context, t domain.LinkToken) error {
	row := fromDomainLinkToken(t)
	err := s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("issue link token: %w", domain.ErrUserNotFound)
	}
	return storeError("issue link token", err)
}

// usableSQL is the condition of a token that may be used at now: of the
// purpose, unused, not expired. Arguments: the hash, the purpose, now.
const usableSQL = `hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`

// Peek implements ports.LinkTokenStore.
func (s *LinkTokenStore) Peek(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	var rows []linkTokenRow
	err := s.db.reader(ctx).Raw(`SELECT `+linkColumns+` FROM link_tokens WHERE `+usableSQL,
		hash, string(purpose), toMicros(now)).Scan(&rows).Error
	if err != nil {
		return domain.LinkToken{}, storeError("peek link token", err)
	}
	if len(rows) == 0 {
		return domain.LinkToken{}, fmt.Errorf("peek link token: %w", domain.ErrInvalidLinkToken)
	}
	return toDomainLinkToken(rows[0]), nil
}

// useLink marks a usable token used and returns it, in one conditional
// write (writeRow): of two concurrent uses, on one node or several, the
// second finds used_at set (on PostgreSQL it waits for the first's row
// lock, then evaluates the condition again on the row the first wrote)
// and changes nothing. Arguments: now, then those of usableSQL (the hash
// the second).
var useLink = newRowUpdate("link_tokens", "used_at = ?", usableSQL, linkColumns, "hash", 1)

// Use implements ports.LinkTokenStore.
func (s *LinkTokenStore) Use(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	at := toMicros(now)
	row, ok, err := writeRow[linkTokenRow](ctx, s.db, useLink, at, hash, string(purpose), at)
	if err != nil {
		return domain.LinkToken{}, storeError("use link token", err)
	}
	if !ok {
		return domain.LinkToken{}, fmt.Errorf("use link token: %w", domain.ErrInvalidLinkToken)
	}
	return toDomainLinkToken(row), nil
}

// liveCodeSQL is the condition of the email sign-in tokens sent to an
// email that a code may still be tried against. Arguments: the email,
// the purpose, now.
const liveCodeSQL = `email = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`

// useCode marks the live sign-in token with the code's hash used, in one
// conditional write as useLink. Arguments: now, the email, the purpose,
// now, the code's hash; the key column is the code's hash, bound to the
// email, and unique among its live tokens since a new one voids the
// earlier (an older, used token with the same six digits may be the row
// read back on MySQL: the same user and email, which is all a caller
// uses).
var useCode = newRowUpdate("link_tokens", "used_at = ?", liveCodeSQL+" AND code_hash = ?", linkColumns, "code_hash", 4)

// UseCode implements ports.LinkTokenStore. A wrong code is one UPDATE
// that counts it and voids at the limit; used_at is assigned first since
// MySQL evaluates a SET's assignments in order, on the values already
// assigned, where PostgreSQL and SQLite use the row as it was.
func (s *LinkTokenStore) UseCode(ctx context.Context, email domain.Email, codeHash string, now time.Time) (domain.LinkToken, error) {
	at := toMicros(now)
	purpose := string(domain.LinkEmailSignIn)
	if codeHash != "" {
		row, ok, err := writeRow[linkTokenRow](ctx, s.db, useCode, at, string(email), purpose, at, codeHash)
		if err != nil {
			return domain.LinkToken{}, storeError("use email code", err)
		}
		if ok {
			return toDomainLinkToken(row), nil
		}
	}
	err := s.db.writer(ctx).Exec(`UPDATE link_tokens
		SET used_at = CASE WHEN code_failures + 1 >= ? THEN ? ELSE used_at END, code_failures = code_failures + 1
		WHERE `+liveCodeSQL, domain.MaxEmailCodeFailures, at, string(email), purpose, at).Error
	if err != nil {
		return domain.LinkToken{}, storeError("count wrong email code", err)
	}
	return domain.LinkToken{}, fmt.Errorf("use email code: %w", domain.ErrInvalidLinkToken)
}

// Void implements ports.LinkTokenStore.
func (s *LinkTokenStore) Void(ctx context.Context, user domain.UserID, purpose domain.LinkPurpose, now time.Time) error {
	err := s.db.writer(ctx).Model(&linkTokenRow{}).
		Where("user_id = ? AND purpose = ? AND used_at IS NULL", string(user), string(purpose)).
		Update("used_at", toMicros(now)).Error
	return storeError("void link tokens", err)
}

// VoidTo implements ports.LinkTokenStore.
func (s *LinkTokenStore) VoidTo(ctx context.Context, email domain.Email, purpose domain.LinkPurpose, now time.Time) error {
	err := s.db.writer(ctx).Model(&linkTokenRow{}).
		Where("email = ? AND purpose = ? AND used_at IS NULL", string(email), string(purpose)).
		Update("used_at", toMicros(now)).Error
	return storeError("void link tokens", err)
}

// RequestedTo implements ports.LinkTokenStore: the requested sign-up
// tokens created at or after since, used or not.
func (s *LinkTokenStore) RequestedTo(ctx context.Context, email domain.Email, since time.Time) (int, time.Time, error) {
	var res struct {
		N    int
		Last sql.NullInt64
	}
	err := s.db.reader(ctx).Raw(`SELECT COUNT(*) AS n, MAX(created_at) AS last FROM link_tokens
		WHERE email = ? AND user_id IS NULL AND requested = ? AND created_at >= ?`, string(email), true, toMicros(since)).Scan(&res).Error
	if err != nil {
		return 0, time.Time{}, storeError("requested sign-up tokens", err)
	}
	if !res.Last.Valid {
		return res.N, time.Time{}, nil
	}
	return res.N, fromMicros(res.Last.Int64), nil
}

// Requested implements ports.LinkTokenStore: the requested tokens created
// at or after since, used or not.
func (s *LinkTokenStore) Requested(ctx context.Context, user domain.UserID, since time.Time) (int, time.Time, error) {
	var res struct {
		N    int
		Last sql.NullInt64
	}
	err := s.db.reader(ctx).Raw(`SELECT COUNT(*) AS n, MAX(created_at) AS last FROM link_tokens
		WHERE user_id = ? AND requested = ? AND created_at >= ?`, string(user), true, toMicros(since)).Scan(&res).Error
	if err != nil {
		return 0, time.Time{}, storeError("requested link tokens", err)
	}
	if !res.Last.Valid {
		return res.N, time.Time{}, nil
	}
	return res.N, fromMicros(res.Last.Int64), nil
}

// nullIfEmpty is s for a nullable column: NULL when empty (a sign-up
// token has no user).
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref is the value of a nullable column, "" for NULL.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
