package gormstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// totpFactorRow mirrors the totp_factors table.
type totpFactorRow struct {
	UserID string `gorm:"column:user_id;primaryKey"`
	// Secret is sealed by the store's SecretBox, the user id as
	// associated data.
	Secret          []byte `gorm:"column:secret"`
	CreatedMicros   int64  `gorm:"column:created_at"`
	ConfirmedMicros *int64 `gorm:"column:confirmed_at"`
	LastStep        int64  `gorm:"column:last_step"`
}

func (totpFactorRow) TableName() string { return "totp_factors" }

// totpColumns are the columns of totpFactorRow, named (see keyColumns).
const totpColumns = "user_id, secret, created_at, confirmed_at, last_step"

// recoveryCodeRow mirrors the recovery_codes table.
type recoveryCodeRow struct {
	UserID        string `gorm:"column:user_id;primaryKey"`
	Hash          string `gorm:"column:hash;primaryKey"`
	CreatedMicros int64  `gorm:"column:created_at"`
	UsedMicros    *int64 `gorm:"column:used_at"`
}

func (recoveryCodeRow) TableName() string { return "recovery_codes" }

// toDomainTOTPFactor is the factor of r, whose secret is secret once
// opened.
func toDomainTOTPFactor(r totpFactorRow, secret []byte) domain.TOTPFactor {
	return domain.TOTPFactor{
		UserID:      domain.UserID(r.UserID),
		Secret:      secret,
		CreatedAt:   fromMicros(r.CreatedMicros),
		ConfirmedAt: fromMicrosPtr(r.ConfirmedMicros),
		LastStep:    r.LastStep,
	}
}

// MFAStore is the SQL ports.MFAStore. TOTP secrets are sealed by its
// SecretBox with the user's id as associated data, so that a secret
// copied to another user's row does not open.
type MFAStore struct {
	db  *DB
	box ports.SecretBox
}

var _ ports.MFAStore = (*MFAStore)(nil)

// NewMFAStore returns the second-factor store of db, sealing and opening
// TOTP secrets with box.
func NewMFAStore(db *DB, box ports.SecretBox) *MFAStore { return &MFAStore{db: db, box: box} }

// putTOTPSQL stores a pending factor, or replaces the user's pending one,
// in one statement: a confirmed factor is left as it is (the WHERE of the
// update), and the statement then changes no row. Arguments: the user id,
// the sealed secret, created_at, last_step.
const putTOTPSQL = `INSERT INTO totp_factors (` + totpColumns + `) VALUES (?, ?, ?, NULL, ?)
ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = excluded.last_step
WHERE totp_factors.confirmed_at IS NULL`

// mysqlPutTOTPSQL is putTOTPSQL on MySQL, whose upsert has no WHERE: each
// column keeps its value when the factor is confirmed (confirmed_at,
// which the statement does not set, decides for all three). The rows it
// reports do not tell a confirmed factor left alone from one replaced
// (with CLIENT_FOUND_ROWS both count 1), so PutTOTP then reads, in the
// same transaction and under the row lock the upsert took, whether the
// stored factor is the pending one it wrote.
const mysqlPutTOTPSQL = `INSERT INTO totp_factors (` + totpColumns + `) VALUES (?, ?, ?, NULL, ?)
ON DUPLICATE KEY UPDATE
	secret = IF(confirmed_at IS NULL, VALUES(secret), secret),
	created_at = IF(confirmed_at IS NULL, VALUES(created_at), created_at),
	last_step = IF(confirmed_at IS NULL, VALUES(last_step), last_step)`

// PutTOTP implements ports.MFAStore: f is stored pending, whatever its
// ConfirmedAt.
func (s *MFAStore) PutTOTP(ctx context.Context, f domain.TOTPFactor) error {
	sealed, err := s.box.Seal(f.Secret, []byte(f.UserID))
	if err != nil {
		return fmt.Errorf("put totp factor: %w", err)
	}
	var n int64
	args := []any{string(f.UserID), sealed, toMicros(f.CreatedAt), f.LastStep}
	if s.db.dialect == dialectMySQL {
		// Other steps, not only other SQL: the upsert cannot tell what it
		// did, and a read in its transaction must (mysqlPutTOTPSQL).
		err = s.db.transaction(ctx, func(tx *gorm.DB) error {
			if err := tx.Exec(mysqlPutTOTPSQL, args...).Error; err != nil {
				return err
			}
			return tx.Raw(`SELECT COUNT(*) FROM totp_factors WHERE user_id = ? AND confirmed_at IS NULL`, string(f.UserID)).Scan(&n).Error
		})
	} else {
		err = s.db.statement(ctx, func(g *gorm.DB) error {
			res := g.Exec(putTOTPSQL, args...)
			n = res.RowsAffected
			return res.Error
		})
	}
	switch {
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("put totp factor: %w", domain.ErrUserNotFound)
	case err != nil:
		return storeError("put totp factor", err)
	case n == 0:
		return fmt.Errorf("put totp factor: %w", domain.ErrMFAAlreadyEnabled)
	}
	return nil
}

// TOTP implements ports.MFAStore. A secret that does not open (sealed
// under a secret key the box lacks, altered, or moved from another user's
// row) is the box's error.
func (s *MFAStore) TOTP(ctx context.Context, user domain.UserID) (domain.TOTPFactor, error) {
	var rows []totpFactorRow
	err := s.db.reader(ctx).Raw(`SELECT `+totpColumns+` FROM totp_factors WHERE user_id = ?`, string(user)).Scan(&rows).Error
	if err != nil {
		return domain.TOTPFactor{}, storeError("totp factor", err)
	}
	if len(rows) == 0 {
		return domain.TOTPFactor{}, fmt.Errorf("totp factor: %w", domain.ErrMFANotEnabled)
	}
	secret, err := s.box.Open(rows[0].Secret, []byte(rows[0].UserID))
	if err != nil {
		return domain.TOTPFactor{}, fmt.Errorf("totp factor of %s: %w", user, err)
	}
	return toDomainTOTPFactor(rows[0], secret), nil
}

// acceptSQL and confirmSQL record an accepted step in one conditional
// statement: of two concurrent acceptances of one step, the second finds
// last_step moved (on PostgreSQL it waits for the first's row lock, then
// evaluates the condition again on the row the first wrote) and changes
// nothing. Arguments: the step, (confirmSQL: the time,) the user, the
// step.
const (
	acceptSQL  = `UPDATE totp_factors SET last_step = ? WHERE user_id = ? AND last_step < ? AND confirmed_at IS NOT NULL`
	confirmSQL = `UPDATE totp_factors SET last_step = ?, confirmed_at = ? WHERE user_id = ? AND last_step < ? AND confirmed_at IS NULL`
)

// AcceptTOTPStep implements ports.MFAStore.
func (s *MFAStore) AcceptTOTPStep(ctx context.Context, user domain.UserID, step int64, at time.Time, confirm bool) (bool, error) {
	var res *gorm.DB
	if confirm {
		res = s.db.writer(ctx).Exec(confirmSQL, step, toMicros(at), string(user), step)
	} else {
		res = s.db.writer(ctx).Exec(acceptSQL, step, string(user), step)
	}
	if res.Error != nil {
		return false, storeError("accept totp step", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// deleteTOTP removes a user's factor and answers whether it was
// confirmed, in one write (writeRow). Arguments: the user id.
var deleteTOTP = newRowDelete("totp_factors", "user_id = ?", "user_id, confirmed_at", "user_id", 0)

// DeleteTOTP implements ports.MFAStore: one write, which returns what it
// removed.
func (s *MFAStore) DeleteTOTP(ctx context.Context, user domain.UserID) (bool, error) {
	row, ok, err := writeRow[totpFactorRow](ctx, s.db, deleteTOTP, string(user))
	if err != nil {
		return false, storeError("delete totp factor", err)
	}
	return ok && row.ConfirmedMicros != nil, nil
}

// ReplaceRecoveryCodes implements ports.MFAStore, in one transaction. A
// hash given twice is stored once. It returns domain.ErrUserNotFound when
// there is no such user and hashes is not empty.
func (s *MFAStore) ReplaceRecoveryCodes(ctx context.Context, user domain.UserID, hashes []string, at time.Time) error {
	hashes = slices.Compact(slices.Sorted(slices.Values(hashes)))
	rows := make([]recoveryCodeRow, len(hashes))
	for i, h := range hashes {
		rows[i] = recoveryCodeRow{UserID: string(user), Hash: h, CreatedMicros: toMicros(at)}
	}
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("user_id = ?", string(user)).Delete(&recoveryCodeRow{}).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.Create(&rows).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("replace recovery codes: %w", domain.ErrUserNotFound)
	}
	return storeError("replace recovery codes", err)
}

// UseRecoveryCode implements ports.MFAStore: one conditional statement,
// so that of concurrent uses of one code, on any nodes, one succeeds.
func (s *MFAStore) UseRecoveryCode(ctx context.Context, user domain.UserID, hash string, at time.Time) (bool, error) {
	res := s.db.writer(ctx).Model(&recoveryCodeRow{}).
		Where("user_id = ? AND hash = ? AND used_at IS NULL", string(user), hash).
		Update("used_at", toMicros(at))
	if res.Error != nil {
		return false, storeError("use recovery code", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// DeleteRecoveryCodes implements ports.MFAStore.
func (s *MFAStore) DeleteRecoveryCodes(ctx context.Context, user domain.UserID) error {
	err := s.db.writer(ctx).Where("user_id = ?", string(user)).Delete(&recoveryCodeRow{}).Error
	return storeError("delete recovery codes", err)
}

// summarySQL counts a user's factors in one query, at one instant.
// Arguments: the user id, three times.
const summarySQL = `SELECT
	(SELECT COUNT(*) FROM totp_factors WHERE user_id = ? AND confirmed_at IS NOT NULL) AS totp,
	(SELECT COUNT(*) FROM passkeys WHERE user_id = ?) AS passkeys,
	(SELECT COUNT(*) FROM recovery_codes WHERE user_id = ? AND used_at IS NULL) AS recovery`

// Summary implements ports.MFAStore.
func (s *MFAStore) Summary(ctx context.Context, user domain.UserID) (domain.MFASummary, error) {
	var res struct{ TOTP, Passkeys, Recovery int }
	id := string(user)
	if err := s.db.reader(ctx).Raw(summarySQL, id, id, id).Scan(&res).Error; err != nil {
		return domain.MFASummary{}, storeError("mfa summary", err)
	}
	return domain.MFASummary{TOTP: res.TOTP > 0, Passkeys: res.Passkeys, RecoveryCodesLeft: res.Recovery}, nil
}

// Reencrypt rewrites every TOTP secret not sealed under the box's current
// key so that it is, all in one transaction, and returns how many rows it
// changed, as KeyStore.Reencrypt does for the keys (reseal, which on
// SQLite also sees that the replaced values leave the file). A secret
// that does not open fails the whole and changes nothing.
func (s *MFAStore) Reencrypt(ctx context.Context) (int, error) {
	return s.db.reseal(ctx, "re-encrypt totp secrets", totpSecrets, s.box, true)
}
