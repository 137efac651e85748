package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
)

// Rotate implements ports.RefreshTokenStore. It returns
// domain.ErrRefreshTokenInvalid when no token has usedHash.
//
// The rotation's writes are conditional: the used token is marked only
// while it is unused, in successor's family and user, and that family is
// active at usedAt (not revoked, not past its end or its idle limit:
// familyActiveSQL); the successor is stored and the family's last use set
// only when it was. The conditional UPDATE of the used token is what makes two
// rotations of one token exclusive, on one instance or many. The family
// row is locked first, as RevokeFamily and RevokeUser lock it (they update
// it): on PostgreSQL with SELECT ... FOR UPDATE, on SQLite through the
// immediate transaction. So a revocation either precedes the rotation,
// which then fails, or follows it and ends the successor too. Only when
// nothing was rotated does a read find out why (rotationRefused).
//
// Each dialect has its own steps, not just its own SQL: PostgreSQL one
// WITH statement, SQLite three prepared statements run through
// database/sql, MySQL a locking read then the writes, in a transaction.
func (s *RefreshTokenStore) Rotate(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (bool, error) {
	var err error
	switch s.db.dialect {
	case dialectPostgres:
		err = s.rotatePostgres(ctx, usedHash, usedAt, successor)
	case dialectSQLite:
		err = s.rotateSQLite(ctx, usedHash, usedAt, successor)
	default:
		err = s.rotateLocked(ctx, usedHash, usedAt, successor)
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errNotRotated):
		return false, nil
	case errors.Is(err, domain.ErrRefreshTokenInvalid), errors.Is(err, domain.ErrRefreshFamilyRevoked),
		errors.Is(err, domain.ErrRefreshFamilyLapsed), errors.Is(err, errFamilyMismatch):
		return false, fmt.Errorf("rotate refresh token: %w", err)
	}
	return false, storeError("rotate refresh token", err)
}

// familyActiveSQL is domain.RefreshFamily.Active over a family's columns
// at a time given twice (Unix microseconds): not revoked, before its
// absolute end, and without an idle limit or used within it. The times
// are integers, so the sum is the same on every dialect.
const familyActiveSQL = `revoked_at IS NULL AND expires_at > ? AND (idle_timeout = 0 OR last_used_at + idle_timeout > ?)`

// activeAt is familyActiveSQL over a row, at in microseconds.
func (r refreshFamilyRow) activeAt(at int64) bool {
	return r.RevokedMicros == nil && at < r.ExpiresMicros && (r.IdleMicros == 0 || at < r.LastUsedMicros+r.IdleMicros)
}

// rotatePostgresSQL is a whole rotation in one statement, so one round
// trip and one commit instead of a transaction's seven round trips
// (docs/performance.md, "The SQL store"). Its parts share one snapshot,
// but every UPDATE and FOR UPDATE of PostgreSQL checks the newest version
// of a row it waits for: a token a concurrent rotation used meanwhile, or
// a family revoked meanwhile, is not matched. The family is locked
// before the token (used needs family's rows), as in RevokeFamily;
// touched updates the row family locked, which its own transaction may.
// family is familyActiveSQL at the rotation's time. Parameters, in
// rotatePostgresArgs' order: $1 the family, $2 the user, $3 the used
// token's hash, $4 the time of use, $5 the successor's hash, $6 and $7
// its issue and end.
const rotatePostgresSQL = `
WITH family AS (
	SELECT id FROM refresh_families WHERE id = $1 AND revoked_at IS NULL
	  AND expires_at > $4 AND (idle_timeout = 0 OR last_used_at + idle_timeout > $4)
	FOR UPDATE
), used AS (
	UPDATE refresh_tokens SET used_at = $4, successor_hash = $5
	WHERE token_hash = $3 AND used_at IS NULL AND family_id = $1 AND user_id = $2
	  AND EXISTS (SELECT 1 FROM family)
	RETURNING family_id
), touched AS (
	UPDATE refresh_families SET last_used_at = $4 WHERE id IN (SELECT family_id FROM used)
)
INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
SELECT $5, family_id, $2, $6, $7 FROM used`

func rotatePostgresArgs(usedHash string, usedAt time.Time, successor domain.RefreshToken) []any {
	return []any{successor.FamilyID, string(successor.UserID), usedHash, toMicros(usedAt), successor.Hash,
		toMicros(successor.IssuedAt), toMicros(successor.ExpiresAt)}
}

func (s *RefreshTokenStore) rotatePostgres(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) error {
	var rotated int64
	var err error
	args := rotatePostgresArgs(usedHash, usedAt, successor)
	if s.db.txOf(ctx) == nil {
		// Outside a transaction, where the provider's refreshes run it:
		// prepared, as Lookup's read, through database/sql; GORM's
		// building of the query was a fifth of a rotation's allocations.
		rotated, err = s.db.execPrepared(ctx, &s.db.rotation, args...)
	} else {
		// In the caller's transaction, in a savepoint of it, on the
		// transaction's own connection.
		err = s.db.statement(ctx, func(g *gorm.DB) error {
			tx, ok := g.Statement.ConnPool.(*sql.Tx)
			if !ok {
				return fmt.Errorf("rotation outside a transaction (%T)", g.Statement.ConnPool)
			}
			sctx, span := s.db.tracer.start(ctx, rotatePostgresSQL)
			res, err := tx.ExecContext(sctx, rotatePostgresSQL, args...)
			if err == nil {
				rotated, err = res.RowsAffected()
			}
			finish(span, err)
			return err
		})
	}
	if err != nil || rotated == 1 {
		return err
	}
	return rotationRefused(s.db.writer(ctx).Raw(rotationStateSQL, usedHash).Row(), successor, usedAt)
}

// The statements of a rotation on SQLite, which has no UPDATE in a WITH:
// three, prepared once (stmtCache), in one immediate transaction.
const (
	rotateSQLiteUse = `UPDATE refresh_tokens SET used_at = ?, successor_hash = ?
		WHERE token_hash = ? AND used_at IS NULL AND family_id = ? AND user_id = ?
		  AND EXISTS (SELECT 1 FROM refresh_families WHERE id = ? AND ` + familyActiveSQL + `)`
	rotateSQLiteStore = `INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
		VALUES (?, ?, ?, ?, ?)`
	rotateSQLiteTouch = `UPDATE refresh_families SET last_used_at = ? WHERE id = ?`
)

func (s *RefreshTokenStore) rotateSQLite(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) error {
	if s.db.txOf(ctx) != nil {
		// In the caller's transaction, in a savepoint of it.
		return s.db.transaction(ctx, func(g *gorm.DB) error {
			tx, ok := g.Statement.ConnPool.(*sql.Tx)
			if !ok {
				return fmt.Errorf("rotation outside a transaction (%T)", g.Statement.ConnPool)
			}
			return s.rotateSQLiteIn(ctx, tx, usedHash, usedAt, successor)
		})
	}
	// A transaction of its own, begun on the writer pool by database/sql:
	// GORM's Begin and Commit added allocations to every rotation and
	// nothing this needs.
	s.db.stmts.prepare(ctx, rotateSQLiteUse, rotateSQLiteStore, rotateSQLiteTouch)
	tx, err := s.db.stmts.pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// After Commit a no-op; on an error or a panic it ends the transaction.
	defer func() { _ = tx.Rollback() }()
	if err := s.rotateSQLiteIn(ctx, tx, usedHash, usedAt, successor); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *RefreshTokenStore) rotateSQLiteIn(ctx context.Context, tx *sql.Tx, usedHash string, usedAt time.Time, successor domain.RefreshToken) error {
	stmts, at := s.db.stmts, toMicros(usedAt)
	res, err := stmts.exec(ctx, tx, rotateSQLiteUse, at, successor.Hash,
		usedHash, successor.FamilyID, string(successor.UserID), successor.FamilyID, at, at)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		sctx, span := s.db.tracer.start(ctx, rotationStateSQL)
		err := rotationRefused(tx.QueryRowContext(sctx, rotationStateSQL, usedHash), successor, usedAt)
		finish(span, err)
		return err
	}
	if _, err := stmts.exec(ctx, tx, rotateSQLiteStore, successor.Hash, successor.FamilyID,
		string(successor.UserID), toMicros(successor.IssuedAt), toMicros(successor.ExpiresAt)); err != nil {
		return err
	}
	_, err = stmts.exec(ctx, tx, rotateSQLiteTouch, at, successor.FamilyID)
	return err
}

// rotateLocked is a rotation on MySQL, step by step in one transaction:
// the family row is read FOR UPDATE before the conditional UPDATE of the
// used token. InnoDB under READ COMMITTED reads a subquery of an UPDATE
// without locking it, so the EXISTS that guards the SQLite statements
// would not order a rotation after a concurrent revocation there.
func (s *RefreshTokenStore) rotateLocked(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) error {
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		var used refreshTokenRow
		if err := tx.Where("token_hash = ?", usedHash).Take(&used).Error; err != nil {
			return err
		}
		if successor.FamilyID != used.FamilyID || string(successor.UserID) != used.UserID {
			return errFamilyMismatch
		}
		var fam refreshFamilyRow
		if err := s.db.dialect.forUpdate(tx).Where("id = ?", used.FamilyID).Take(&fam).Error; err != nil {
			return err
		}
		if fam.RevokedMicros != nil {
			return domain.ErrRefreshFamilyRevoked
		}
		if !fam.activeAt(toMicros(usedAt)) {
			return domain.ErrRefreshFamilyLapsed
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
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.ErrRefreshTokenInvalid
	}
	return err
}

// rotationStateSQL reads what decides a rotation of a token, for
// rotationRefused.
const rotationStateSQL = `SELECT t.family_id, t.user_id, t.used_at,
	       f.revoked_at, f.expires_at, f.last_used_at, f.idle_timeout
	FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
	WHERE t.token_hash = ?`

// rotationRefused reads, from the row of rotationStateSQL, why a
// rotation at usedAt changed nothing, and returns that as an error,
// checked in the order the rotation's conditions are listed in the port:
// domain.ErrRefreshTokenInvalid for no such token (or none with a family:
// deleted with its user since), errFamilyMismatch,
// domain.ErrRefreshFamilyRevoked, domain.ErrRefreshFamilyLapsed,
// errNotRotated for a token used already.
func rotationRefused(row *sql.Row, successor domain.RefreshToken, usedAt time.Time) error {
	var familyID, userID string
	var used *int64
	var fam refreshFamilyRow
	err := row.Scan(&familyID, &userID, &used, &fam.RevokedMicros, &fam.ExpiresMicros, &fam.LastUsedMicros, &fam.IdleMicros)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return domain.ErrRefreshTokenInvalid
	case err != nil:
		return err
	case familyID != successor.FamilyID || userID != string(successor.UserID):
		return errFamilyMismatch
	case fam.RevokedMicros != nil:
		return domain.ErrRefreshFamilyRevoked
	case !fam.activeAt(toMicros(usedAt)):
		return domain.ErrRefreshFamilyLapsed
	case used != nil:
		return errNotRotated
	}
	// Every condition holds now: the rotation met a state that has
	// changed since, which it must not undo by guessing.
	return errors.New("refresh token rotation changed nothing, for no reason found")
}
