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

// mfaChallengeRow mirrors the mfa_challenges table.
type mfaChallengeRow struct {
	Hash          string `gorm:"column:hash;primaryKey"`
	UserID        string `gorm:"column:user_id"`
	Email         string `gorm:"column:email"`
	CreatedMicros int64  `gorm:"column:created_at"`
	ExpiresMicros int64  `gorm:"column:expires_at"`
	Failures      int    `gorm:"column:failures"`
	UsedMicros    *int64 `gorm:"column:used_at"`
}

func (mfaChallengeRow) TableName() string { return "mfa_challenges" }

// challengeColumns are the columns of mfaChallengeRow, named (see
// keyColumns).
const challengeColumns = "hash, user_id, email, created_at, expires_at, failures, used_at"

func fromDomainMFAChallenge(c domain.MFAChallenge) mfaChallengeRow {
	return mfaChallengeRow{
		Hash:          c.Hash,
		UserID:        string(c.UserID),
		Email:         string(c.Email),
		CreatedMicros: toMicros(c.CreatedAt),
		ExpiresMicros: toMicros(c.ExpiresAt),
		Failures:      c.Failures,
		UsedMicros:    toMicrosPtr(c.UsedAt),
	}
}

func toDomainMFAChallenge(r mfaChallengeRow) domain.MFAChallenge {
	return domain.MFAChallenge{
		Hash:      r.Hash,
		UserID:    domain.UserID(r.UserID),
		Email:     domain.Email(r.Email),
		CreatedAt: fromMicros(r.CreatedMicros),
		ExpiresAt: fromMicros(r.ExpiresMicros),
		Failures:  r.Failures,
		UsedAt:    fromMicrosPtr(r.UsedMicros),
	}
}

// MFAChallengeStore is the SQL ports.MFAChallengeStore.
type MFAChallengeStore struct{ db *DB }

var _ ports.MFAChallengeStore = (*MFAChallengeStore)(nil)

// NewMFAChallengeStore returns the mfaToken store of db.
func NewMFAChallengeStore(db *DB) *MFAChallengeStore { return &MFAChallengeStore{db: db} }

// CreateChallenge implements ports.MFAChallengeStore. It first drops the
// challenges that expired before c was created, which nothing can use
// any more, so that the table holds a few minutes of logins.
func (s *MFAChallengeStore) CreateChallenge(ctx context.Context, c domain.MFAChallenge) error {
	row := fromDomainMFAChallenge(c)
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("expires_at <= ?", row.CreatedMicros).Delete(&mfaChallengeRow{}).Error; err != nil {
			return err
		}
		return tx.Create(&row).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("create mfa challenge: %w", domain.ErrUserNotFound)
	}
	return storeError("create mfa challenge", err)
}

// usableChallengeSQL is the condition of a challenge that may be used at
// now (domain.MFAChallenge.Usable). Arguments: the hash, now.
var usableChallengeSQL = fmt.Sprintf(`hash = ? AND used_at IS NULL AND expires_at > ? AND failures < %d`, domain.MFAChallengeMaxFailures)

// Challenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) Challenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	var rows []mfaChallengeRow
	err := s.db.reader(ctx).Raw(`SELECT `+challengeColumns+` FROM mfa_challenges WHERE `+usableChallengeSQL,
		hash, toMicros(now)).Scan(&rows).Error
	return oneChallenge("mfa challenge", rows, err)
}

// failSQL counts a wrong code against a usable challenge and returns it,
// in one statement: concurrent failures each add one (on PostgreSQL each
// waits for the row lock of the one before and adds to what it wrote),
// and none counts past the limit. Arguments: those of usableChallengeSQL.
var failSQL = `UPDATE mfa_challenges SET failures = failures + 1 WHERE ` + usableChallengeSQL + ` RETURNING ` + challengeColumns

// FailChallenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) FailChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	var rows []mfaChallengeRow
	args := []any{hash, toMicros(now)}
	var err error
	if s.db.dialect == dialectMySQL {
		err = s.db.mysqlUpdateReturning(ctx, &rows, mysqlFailSQL, args, mysqlChallengeByHashSQL, hash)
	} else {
		err = s.db.writer(ctx).Raw(failSQL, args...).Scan(&rows).Error
	}
	return oneChallenge("fail mfa challenge", rows, err)
}

// useChallengeSQL marks a usable challenge used and returns it, in one
// conditional statement, as useSQL does a link token. Arguments: now,
// then those of usableChallengeSQL.
var useChallengeSQL = `UPDATE mfa_challenges SET used_at = ? WHERE ` + usableChallengeSQL + ` RETURNING ` + challengeColumns

// mysqlFailSQL, mysqlUseChallengeSQL and mysqlChallengeByHashSQL are
// failSQL and useChallengeSQL on MySQL (see mysqlUpdateReturning).
var (
	mysqlFailSQL            = `UPDATE mfa_challenges SET failures = failures + 1 WHERE ` + usableChallengeSQL
	mysqlUseChallengeSQL    = `UPDATE mfa_challenges SET used_at = ? WHERE ` + usableChallengeSQL
	mysqlChallengeByHashSQL = `SELECT ` + challengeColumns + ` FROM mfa_challenges WHERE hash = ?`
)

// UseChallenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) UseChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	at := toMicros(now)
	var rows []mfaChallengeRow
	args := []any{at, hash, at}
	var err error
	if s.db.dialect == dialectMySQL {
		err = s.db.mysqlUpdateReturning(ctx, &rows, mysqlUseChallengeSQL, args, mysqlChallengeByHashSQL, hash)
	} else {
		err = s.db.writer(ctx).Raw(useChallengeSQL, args...).Scan(&rows).Error
	}
	return oneChallenge("use mfa challenge", rows, err)
}

// oneChallenge is the answer of a statement that finds at most one
// usable challenge: it, or domain.ErrInvalidMFAToken.
func oneChallenge(op string, rows []mfaChallengeRow, err error) (domain.MFAChallenge, error) {
	if err != nil {
		return domain.MFAChallenge{}, storeError(op, err)
	}
	if len(rows) == 0 {
		return domain.MFAChallenge{}, fmt.Errorf("%s: %w", op, domain.ErrInvalidMFAToken)
	}
	return toDomainMFAChallenge(rows[0]), nil
}
