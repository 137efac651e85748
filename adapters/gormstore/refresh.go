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
	Hash                string
	FamilyID            string
	UserID              string
	IssuedMicros        int64
	ExpiresMicros       int64
	UsedMicros          *int64
	SuccessorHash       *string
	FamilyUserID        string
	FamilyCreatedMicros int64
	FamilyExpiresMicros int64
	FamilyRevokedMicros *int64
	FamilyAMR           string
	FamilyLastUsed      int64
	FamilyUserAgent     string
	FamilyIP            string
	FamilyIdleMicros    int64
	FamilyClientID      *string
	FamilyScopes        *string
	FamilyAuthMicros    *int64
}

// refreshLookupSelect is Lookup's query but its parameter: a token joined
// with its family, in lookupRow's order (scanTargets).
const refreshLookupSelect = `SELECT t.token_hash, t.family_id, t.user_id, t.issued_at, t.expires_at, t.used_at, t.successor_hash,
		       f.user_id, f.created_at, f.expires_at, f.revoked_at, f.amr, f.last_used_at, f.user_agent, f.ip,
		       f.idle_timeout, f.client_id, f.scopes, f.auth_time
		FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
		WHERE t.token_hash = `

// refreshLookupQuery is Lookup's statement on the read pool (hotStatement):
// every refresh makes it.
func refreshLookupQuery(d dialect) string { return refreshLookupSelect + d.param(1) }

func (r *lookupRow) scanTargets() []any {
	return []any{&r.Hash, &r.FamilyID, &r.UserID, &r.IssuedMicros, &r.ExpiresMicros, &r.UsedMicros, &r.SuccessorHash,
		&r.FamilyUserID, &r.FamilyCreatedMicros, &r.FamilyExpiresMicros, &r.FamilyRevokedMicros, &r.FamilyAMR,
		&r.FamilyLastUsed, &r.FamilyUserAgent, &r.FamilyIP, &r.FamilyIdleMicros,
		&r.FamilyClientID, &r.FamilyScopes, &r.FamilyAuthMicros}
}

// Lookup implements ports.RefreshTokenStore. One joined query reads the
// token and its family at the same instant. Its row is scanned by
// database/sql, not GORM: GORM's reflective Scan was most of Lookup's CPU
// (docs/performance.md, "The SQL store"); outside a transaction, where
// every refresh makes it, the statement is prepared (hotStatement), since
// GORM's building of a raw query was most of what was left.
func (s *RefreshTokenStore) Lookup(ctx context.Context, hash string) (domain.RefreshToken, domain.RefreshFamily, error) {
	var row lookupRow
	err := s.readLookup(ctx, hash, row.scanTargets())
	if errors.Is(err, sql.ErrNoRows) {
		return domain.RefreshToken{}, domain.RefreshFamily{}, fmt.Errorf("look up refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	if err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, storeError("look up refresh token", err)
	}
	tok, fam, err := row.toDomain()
	if err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, fmt.Errorf("look up refresh token: %w", err)
	}
	return tok, fam, nil
}

// toDomain is the token and the family of a scanned row.
func (r *lookupRow) toDomain() (domain.RefreshToken, domain.RefreshFamily, error) {
	fam, err := toDomainRefreshFamily(refreshFamilyRow{
		ID:             r.FamilyID,
		UserID:         r.FamilyUserID,
		CreatedMicros:  r.FamilyCreatedMicros,
		ExpiresMicros:  r.FamilyExpiresMicros,
		RevokedMicros:  r.FamilyRevokedMicros,
		AMR:            r.FamilyAMR,
		LastUsedMicros: r.FamilyLastUsed,
		UserAgent:      r.FamilyUserAgent,
		IP:             r.FamilyIP,
		IdleMicros:     r.FamilyIdleMicros,
		ClientID:       r.FamilyClientID,
		Scopes:         r.FamilyScopes,
		AuthMicros:     r.FamilyAuthMicros,
	})
	if err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, err
	}
	tok := toDomainRefreshToken(refreshTokenRow{
		Hash:          r.Hash,
		FamilyID:      r.FamilyID,
		UserID:        r.UserID,
		IssuedMicros:  r.IssuedMicros,
		ExpiresMicros: r.ExpiresMicros,
		UsedMicros:    r.UsedMicros,
		SuccessorHash: r.SuccessorHash,
	})
	return tok, fam, nil
}

// readLookup scans the row of refreshLookupQuery into targets.
func (s *RefreshTokenStore) readLookup(ctx context.Context, hash string, targets []any) error {
	if s.db.txOf(ctx) != nil {
		// GORM writes each dialect's placeholder for ? itself.
		return s.db.reader(ctx).Raw(refreshLookupSelect+"?", hash).Row().Scan(targets...)
	}
	return s.db.queryRow(ctx, &s.db.refreshLookup, targets, hash)
}

// RevokeFamily implements ports.RefreshTokenStore. A family keeps the time
// it was first revoked.
func (s *RefreshTokenStore) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	err := s.db.writer(ctx).Model(&refreshFamilyRow{}).
		Where("id = ? AND revoked_at IS NULL", familyID).
		Update("revoked_at", toMicros(at)).Error
	return storeError("revoke refresh family", err)
}

// revokeUser ends a user's open families and answers their ids
// (updateSet): the rows it updates are the ids it returns, on MySQL read
// locked first, so that no other revocation ends them meanwhile.
// Arguments: the time, the user id.
var revokeUser = setUpdate{
	returning: `UPDATE refresh_families SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL RETURNING id`,
	choose:    `SELECT id FROM refresh_families WHERE user_id = ? AND revoked_at IS NULL FOR UPDATE`,
	update:    `UPDATE refresh_families SET revoked_at = ? WHERE id IN ?`,
}

// RevokeUser implements ports.RefreshTokenStore. The ids returned are
// exactly the families this call ended (revokeUser).
func (s *RefreshTokenStore) RevokeUser(ctx context.Context, userID domain.UserID, at time.Time) ([]string, error) {
	args := []any{toMicros(at), string(userID)}
	ended, err := updateSet(ctx, s.db, revokeUser, ownKey, args, args[1:], args[:1])
	if err != nil {
		return nil, storeError("revoke user's refresh families", err)
	}
	return ended, nil
}

// Sessions implements ports.RefreshTokenStore.
func (s *RefreshTokenStore) Sessions(ctx context.Context, userID domain.UserID, now time.Time) ([]domain.RefreshFamily, error) {
	var rows []refreshFamilyRow
	err := s.db.reader(ctx).Where("user_id = ? AND "+familyActiveSQL, string(userID), toMicros(now), toMicros(now)).
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
		Where("id = ? AND user_id = ? AND "+familyActiveSQL, familyID, string(userID), toMicros(at), toMicros(at)).
		Update("revoked_at", toMicros(at))
	if res.Error != nil {
		return storeError("revoke session", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("revoke session: %w", domain.ErrSessionNotFound)
	}
	return nil
}
