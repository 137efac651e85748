package gormstore

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// mfaChallengeRow mirrors the mfa_challenges table.
type mfaChallengeRow struct {
	Hash          string `gorm:"column:hash;primaryKey"`
	UserID        string `gorm:"column:user_id"`
	Email         string `gorm:"column:email"`
	FirstFactor   string `gorm:"column:first_factor"`
	CreatedMicros int64  `gorm:"column:created_at"`
	ExpiresMicros int64  `gorm:"column:expires_at"`
	Failures      int    `gorm:"column:failures"`
	UsedMicros    *int64 `gorm:"column:used_at"`
}

func (mfaChallengeRow) TableName() string { return "mfa_challenges" }

// challengeColumns are the columns of mfaChallengeRow, named (see
// keyColumns).
const challengeColumns = "hash, user_id, email, first_factor, created_at, expires_at, failures, used_at"

func fromDomainMFAChallenge(c domain.MFAChallenge) mfaChallengeRow {
	return mfaChallengeRow{
		Hash:          c.Hash,
		UserID:        string(c.UserID),
		Email:         string(c.Email),
		FirstFactor:   c.FirstFactor,
		CreatedMicros: toMicros(c.CreatedAt),
		ExpiresMicros: toMicros(c.ExpiresAt),
		Failures:      c.Failures,
		UsedMicros:    toMicrosPtr(c.UsedAt),
	}
}

func toDomainMFAChallenge(r mfaChallengeRow) domain.MFAChallenge {
	return domain.MFAChallenge{
		Hash:        r.Hash,
		UserID:      domain.UserID(r.UserID),
		Email:       domain.Email(r.Email),
		FirstFactor: r.FirstFactor,
		CreatedAt:   fromMicros(r.CreatedMicros),
		ExpiresAt:   fromMicros(r.ExpiresMicros),
		Failures:    r.Failures,
		UsedAt:      fromMicrosPtr(r.UsedMicros),
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
	return createAfterExpired(ctx, s.db, "create mfa challenge", &row, row.CreatedMicros)
}

// usableChallengeSQL is the condition of a challenge that may be used at
// now (domain.MFAChallenge.Usable). Arguments: the hash, now.
var usableChallengeSQL = fmt.Sprintf(`hash = ? AND used_at IS NULL AND expires_at > ? AND failures < %d`, domain.MFAChallengeMaxFailures)

// Challenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) Challenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	var rows []mfaChallengeRow
	err := s.db.reader(ctx).Raw(`SELECT `+challengeColumns+` FROM mfa_challenges WHERE `+usableChallengeSQL,
		hash, toMicros(now)).Scan(&rows).Error
	row, ok, err := firstRow(rows, err)
	return oneChallenge("mfa challenge", row, ok, err)
}

// failChallenge counts a wrong code against a usable challenge and
// returns it, in one write (writeRow): concurrent failures each add one
// (on PostgreSQL each waits for the row lock of the one before and adds
// to what it wrote), and none counts past the limit. Arguments: those of
// usableChallengeSQL (the hash the first).
var failChallenge = newRowUpdate("mfa_challenges", "failures = failures + 1", usableChallengeSQL, challengeColumns, "hash", 0)

// FailChallenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) FailChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	row, ok, err := writeRow[mfaChallengeRow](ctx, s.db, failChallenge, hash, toMicros(now))
	return oneChallenge("fail mfa challenge", row, ok, err)
}

// useChallenge marks a usable challenge used and returns it, in one
// conditional write, as useLink does a link token. Arguments: now, then
// those of usableChallengeSQL (the hash the second).
var useChallenge = newRowUpdate("mfa_challenges", "used_at = ?", usableChallengeSQL, challengeColumns, "hash", 1)

// UseChallenge implements ports.MFAChallengeStore.
func (s *MFAChallengeStore) UseChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error) {
	at := toMicros(now)
	row, ok, err := writeRow[mfaChallengeRow](ctx, s.db, useChallenge, at, hash, at)
	return oneChallenge("use mfa challenge", row, ok, err)
}

// oneChallenge is the answer of a statement that finds at most one
// usable challenge: it, or domain.ErrInvalidMFAToken.
func oneChallenge(op string, row mfaChallengeRow, found bool, err error) (domain.MFAChallenge, error) {
	if err != nil {
		return domain.MFAChallenge{}, storeError(op, err)
	}
	if !found {
		return domain.MFAChallenge{}, fmt.Errorf("%s: %w", op, domain.ErrInvalidMFAToken)
	}
	return toDomainMFAChallenge(row), nil
}
