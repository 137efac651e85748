package gormstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// RefreshTokenStore is the SQL ports.RefreshTokenStore.
type RefreshTokenStore struct{ db *DB }

var _ ports.RefreshTokenStore = (*RefreshTokenStore)(nil)

// NewRefreshTokenStore returns the refresh-token store of db.
func NewRefreshTokenStore(db *DB) *RefreshTokenStore { return &RefreshTokenStore{db: db} }

// errNotRotated rolls back a rotation whose token was used already.
var errNotRotated = errors.New("refresh token used already")

// CreateFamily implements ports.RefreshTokenStore. It returns
// domain.ErrUserNotFound when the family's user does not exist (deleted
// while logging in, say).
func (s *RefreshTokenStore) CreateFamily(ctx context.Context, f domain.RefreshFamily, first domain.RefreshToken) error {
	if first.FamilyID != f.ID || first.UserID != f.UserID {
		return fmt.Errorf("create refresh family: %w", errFamilyMismatch)
	}
	famRow, err := fromDomainRefreshFamily(f)
	if err != nil {
		return fmt.Errorf("create refresh family: %w", err)
	}
	tokRow := fromDomainRefreshToken(first)
	err = s.db.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(&famRow).Error; err != nil {
			return err
		}
		return tx.Create(&tokRow).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("create refresh family: %w", domain.ErrUserNotFound)
	}
	return storeError("create refresh family", err)
}

// lookupRow is a token joined with its family.
type lookupRow struct {
	Hash                string  `gorm:"column:token_hash"`
	FamilyID            string  `gorm:"column:family_id"`
	UserID              string  `gorm:"column:user_id"`
	IssuedMicros        int64   `gorm:"column:issued_at"`
	ExpiresMicros       int64   `gorm:"column:expires_at"`
	UsedMicros          *int64  `gorm:"column:used_at"`
	SuccessorHash       *string `gorm:"column:successor_hash"`
	FamilyUserID        string  `gorm:"column:family_user_id"`
	FamilyCreatedMicros int64   `gorm:"column:family_created_at"`
	FamilyExpiresMicros int64   `gorm:"column:family_expires_at"`
	FamilyRevokedMicros *int64  `gorm:"column:family_revoked_at"`
	FamilyAMR           string  `gorm:"column:family_amr"`
	FamilyLastUsed      int64   `gorm:"column:family_last_used_at"`
	FamilyUserAgent     string  `gorm:"column:family_user_agent"`
	FamilyIP            string  `gorm:"column:family_ip"`
}

// Lookup implements ports.RefreshTokenStore. One joined query reads the
// token and its family at the same instant.
func (s *RefreshTokenStore) Lookup(ctx context.Context, hash string) (domain.RefreshToken, domain.RefreshFamily, error) {
	var rows []lookupRow
	err := s.db.reader(ctx).Raw(`
		SELECT t.token_hash, t.family_id, t.user_id, t.issued_at, t.expires_at, t.used_at, t.successor_hash,
		       f.user_id AS family_user_id, f.created_at AS family_created_at,
		       f.expires_at AS family_expires_at, f.revoked_at AS family_revoked_at, f.amr AS family_amr,
		       f.last_used_at AS family_last_used_at, f.user_agent AS family_user_agent, f.ip AS family_ip
		FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
		WHERE t.token_hash = ?`, hash).Scan(&rows).Error
	if err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, storeError("look up refresh token", err)
	}
	if len(rows) == 0 {
		return domain.RefreshToken{}, domain.RefreshFamily{}, fmt.Errorf("look up refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	row := rows[0]
	fam, err := toDomainRefreshFamily(refreshFamilyRow{
		ID:             row.FamilyID,
		UserID:         row.FamilyUserID,
		CreatedMicros:  row.FamilyCreatedMicros,
		ExpiresMicros:  row.FamilyExpiresMicros,
		RevokedMicros:  row.FamilyRevokedMicros,
		AMR:            row.FamilyAMR,
		LastUsedMicros: row.FamilyLastUsed,
		UserAgent:      row.FamilyUserAgent,
		IP:             row.FamilyIP,
	})
	if err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, fmt.Errorf("look up refresh token: %w", err)
	}
	tok := toDomainRefreshToken(refreshTokenRow{
		Hash:          row.Hash,
		FamilyID:      row.FamilyID,
		UserID:        row.UserID,
		IssuedMicros:  row.IssuedMicros,
		ExpiresMicros: row.ExpiresMicros,
		UsedMicros:    row.UsedMicros,
		SuccessorHash: row.SuccessorHash,
	})
	return tok, fam, nil
}

// Rotate implements ports.RefreshTokenStore. It returns
// domain.ErrRefreshTokenInvalid when no token has usedHash.
//
// The family row is read under a lock that RevokeFamily and RevokeUser
// also take (they update that row): on PostgreSQL with SELECT ... FOR
// UPDATE, on SQLite through the immediate transaction. So a revocation
// either precedes the rotation, which then fails, or follows it and ends
// the successor too. The conditional UPDATE of the used token is what
// makes two rotations of one token exclusive, on one instance or many.
func (s *RefreshTokenStore) Rotate(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (bool, error) {
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		var used refreshTokenRow
		if err := tx.Where("token_hash = ?", usedHash).Take(&used).Error; err != nil {
			return err
		}
		if successor.FamilyID != used.FamilyID || string(successor.UserID) != used.UserID {
			return errFamilyMismatch
		}
		read := tx
		if s.db.dialect.rowLocks() {
			read = read.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate})
		}
		var fam refreshFamilyRow
		if err := read.Where("id = ?", used.FamilyID).Take(&fam).Error; err != nil {
			return err
		}
		if fam.RevokedMicros != nil {
			return domain.ErrRefreshFamilyRevoked
		}
		res := tx.Model(&refreshTokenRow{}).
			Where("token_hash = ? AND used_at IS NULL", usedHash).
			Updates(map[string]any{"used_at": toMicros(usedAt), "successor_hash": successor.Hash})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return errNotRotated
		}
		succRow := fromDomainRefreshToken(successor)
		if err := tx.Create(&succRow).Error; err != nil {
			return err
		}
		return tx.Model(&refreshFamilyRow{}).Where("id = ?", used.FamilyID).
			Update("last_used_at", toMicros(usedAt)).Error
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errNotRotated):
		return false, nil
	case errors.Is(err, gorm.ErrRecordNotFound):
		// No such token, or its family was deleted with its user since.
		return false, fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshTokenInvalid)
	case errors.Is(err, domain.ErrRefreshFamilyRevoked), errors.Is(err, errFamilyMismatch):
		return false, fmt.Errorf("rotate refresh token: %w", err)
	}
	return false, storeError("rotate refresh token", err)
}

// RevokeFamily implements ports.RefreshTokenStore. A family keeps the time
// it was first revoked.
func (s *RefreshTokenStore) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	err := s.db.writer(ctx).Model(&refreshFamilyRow{}).
		Where("id = ? AND revoked_at IS NULL", familyID).
		Update("revoked_at", toMicros(at)).Error
	return storeError("revoke refresh family", err)
}

// RevokeUser implements ports.RefreshTokenStore. The ids returned are
// exactly the families this call ended: on PostgreSQL those of its UPDATE
// ... RETURNING; on SQLite read and revoked in one transaction, under the
// one writer's lock; on MySQL read locked and revoked in one transaction.
func (s *RefreshTokenStore) RevokeUser(ctx context.Context, userID domain.UserID, at time.Time) ([]string, error) {
	var ended []string
	var err error
	switch s.db.dialect {
	case dialectPostgres:
		// One statement: the rows it updates are the ids it returns.
		err = s.db.writer(ctx).Raw(`UPDATE refresh_families SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id`,
			toMicros(at), string(userID)).Scan(&ended).Error
	case dialectMySQL:
		ended, err = s.mysqlRevokeUser(ctx, userID, at)
	default:
		err = s.db.transaction(ctx, func(tx *gorm.DB) error {
			ended = ended[:0]
			const open = "user_id = ? AND revoked_at IS NULL"
			if err := tx.Model(&refreshFamilyRow{}).Where(open, string(userID)).Pluck("id", &ended).Error; err != nil {
				return err
			}
			return tx.Model(&refreshFamilyRow{}).Where(open, string(userID)).Update("revoked_at", toMicros(at)).Error
		})
	}
	if err != nil {
		return nil, storeError("revoke user's refresh families", err)
	}
	return ended, nil
}

// mysqlRevokeUser is RevokeUser on MySQL, which has no UPDATE …
// RETURNING: the open families are read locked, so that no other
// revocation ends them meanwhile, and revoked by id.
func (s *RefreshTokenStore) mysqlRevokeUser(ctx context.Context, userID domain.UserID, at time.Time) ([]string, error) {
	var ended []string
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		ended = ended[:0]
		err := tx.Model(&refreshFamilyRow{}).Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}).
			Where("user_id = ? AND revoked_at IS NULL", string(userID)).Pluck("id", &ended).Error
		if err != nil || len(ended) == 0 {
			return err
		}
		return tx.Model(&refreshFamilyRow{}).Where("id IN ?", ended).Update("revoked_at", toMicros(at)).Error
	})
	return ended, err
}

// Sessions implements ports.RefreshTokenStore.
func (s *RefreshTokenStore) Sessions(ctx context.Context, userID domain.UserID, now time.Time) ([]domain.RefreshFamily, error) {
	var rows []refreshFamilyRow
	err := s.db.reader(ctx).Where("user_id = ? AND revoked_at IS NULL AND expires_at > ?", string(userID), toMicros(now)).
		Order("created_at DESC, id DESC").Find(&rows).Error
	if err != nil {
		return nil, storeError("list sessions", err)
	}
	out := make([]domain.RefreshFamily, 0, len(rows))
	for _, r := range rows {
		f, err := toDomainRefreshFamily(r)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, f)
	}
	// The ids' collation differs between dialects; the domain's order is
	// the one answered.
	domain.SortSessions(out)
	return out, nil
}

// RevokeSession implements ports.RefreshTokenStore: one conditional
// update, which finds the family only when it is the user's and active.
func (s *RefreshTokenStore) RevokeSession(ctx context.Context, userID domain.UserID, familyID string, at time.Time) error {
	res := s.db.writer(ctx).Model(&refreshFamilyRow{}).
		Where("id = ? AND user_id = ? AND revoked_at IS NULL AND expires_at > ?", familyID, string(userID), toMicros(at)).
		Update("revoked_at", toMicros(at))
	if res.Error != nil {
		return storeError("revoke session", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("revoke session: %w", domain.ErrSessionNotFound)
	}
	return nil
}
