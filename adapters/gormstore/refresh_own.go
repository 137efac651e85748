package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
)

// RotateOwn implements ports.RefreshTokenStore. On PostgreSQL, outside a
// transaction (where every refresh of the app's own runs it), it is one
// prepared statement, rotateOwnPostgresSQL: one round trip instead of
// Lookup's and Rotate's two, which took a sixth off userd's CPU a
// refresh, though not PostgreSQL's (docs/performance.md, "Speed, third
// pass"), and a round trip off its latency. Elsewhere it is Lookup,
// then Rotate when the token may be rotated: Rotate checks again, in its
// own transaction, what may have changed since the read (the token's use,
// the family's state), and the rest (the token's expiry, its family and
// user, the family's client) never changes.
func (s *RefreshTokenStore) RotateOwn(ctx context.Context, usedHash string, usedAt time.Time,
	successor domain.RefreshToken) (domain.RefreshToken, domain.RefreshFamily, bool, error) {
	if s.db.dialect == dialectPostgres && s.db.txOf(ctx) == nil {
		return s.rotateOwnPostgres(ctx, usedHash, usedAt, successor)
	}
	tok, fam, err := s.Lookup(ctx, usedHash)
	if err != nil || !tok.RotatableOwn(fam, usedAt) {
		return tok, fam, false, err
	}
	successor.FamilyID, successor.UserID = fam.ID, fam.UserID
	if fam.ExpiresAt.Before(successor.ExpiresAt) {
		successor.ExpiresAt = fam.ExpiresAt
	}
	rotated, err := s.Rotate(ctx, usedHash, usedAt, successor)
	if errors.Is(err, domain.ErrRefreshFamilyRevoked) || errors.Is(err, domain.ErrRefreshFamilyLapsed) {
		// Ended since the read: the caller judges the token as it was read.
		return tok, fam, false, nil
	}
	return tok, fam, rotated, err
}

// rotateOwnPostgresSQL is Lookup's read and rotatePostgresSQL's rotation
// in one statement, for RotateOwn: found is Lookup's row (lookupRow's
// columns, then whether it rotated); family sets the family's last use,
// which locks its row, when domain.RefreshToken.RotatableOwn holds, on
// found's token and on the newest version of the family
// (familyActiveSQL); the rest is rotatePostgresSQL's, with the
// successor's family and user those of the token, and its end cut to the
// family's. As there, a token a concurrent rotation used after found's
// snapshot is not matched by used, which PostgreSQL checks on the newest
// version of the row it waited for: this one then rotates nothing, and
// returns found as it was, though the family's last use is now its time
// (the token was presented: within the grace window its successor is the
// answer, past it the family is revoked). Where rotatePostgresSQL locks
// the family FOR UPDATE and then updates it, this one only updates it:
// the lock that UPDATE takes (FOR NO KEY UPDATE) still orders it with
// every revocation, which updates the row too, and with the FOR UPDATE
// of a session limit's choice, and the family's tuple is written once
// instead of twice, a sixth of PostgreSQL's CPU a refresh
// (docs/performance.md, "Speed, eighth pass"). family names its family
// by a scalar subquery, not a join with found, so that PostgreSQL reads
// it by its key whatever it knows of the table: joined, before the
// table's first ANALYZE, it read every family not revoked and kept the
// one (TestRotateOwnPostgres_reads_one_family). Parameters: $1 the used
// token's hash, $2 the time of use (microseconds), $3 the successor's
// hash, $4 and $5 its issue and end.
const rotateOwnPostgresSQL = `
WITH found AS (
	SELECT t.token_hash, t.family_id, t.user_id, t.issued_at, t.expires_at, t.used_at, t.successor_hash,
	       f.user_id AS family_user_id, f.created_at, f.expires_at AS family_expires_at, f.revoked_at, f.amr,
	       f.last_used_at, f.user_agent, f.ip, f.idle_timeout, f.client_id, f.scopes, f.auth_time
	FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
	WHERE t.token_hash = $1
), family AS (
	UPDATE refresh_families SET last_used_at = $2
	WHERE id = (SELECT family_id FROM found WHERE used_at IS NULL AND expires_at > $2 AND client_id IS NULL)
	  AND revoked_at IS NULL AND expires_at > $2 AND (idle_timeout = 0 OR last_used_at + idle_timeout > $2)
	RETURNING id
), used AS (
	UPDATE refresh_tokens SET used_at = $2, successor_hash = $3
	WHERE token_hash = $1 AND used_at IS NULL AND EXISTS (SELECT 1 FROM family)
	RETURNING family_id, user_id
), stored AS (
	INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
	SELECT $3, used.family_id, used.user_id, $4, LEAST($5, found.family_expires_at) FROM used, found
	RETURNING 1
)
SELECT found.*, EXISTS (SELECT 1 FROM stored) FROM found`

func (s *RefreshTokenStore) rotateOwnPostgres(ctx context.Context, usedHash string, usedAt time.Time,
	successor domain.RefreshToken) (tok domain.RefreshToken, fam domain.RefreshFamily, rotated bool, err error) {
	row, rotated, err := s.db.rotations.rotate(ctx,
		[]any{usedHash, toMicros(usedAt), successor.Hash, toMicros(successor.IssuedAt), toMicros(successor.ExpiresAt)})
	if errors.Is(err, sql.ErrNoRows) {
		return tok, fam, false, fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	if err != nil {
		return tok, fam, false, storeError("rotate refresh token", err)
	}
	if tok, fam, err = row.toDomain(); err != nil {
		// A family that does not read back (an amr domain.ParseAMR
		// refuses) fails here as it fails every Lookup.
		return tok, fam, false, fmt.Errorf("rotate refresh token: %w", err)
	}
	return tok, fam, rotated, nil
}
