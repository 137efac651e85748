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

// The sessions granted to the OpenID provider's clients: a family by id
// whatever its state, the revocations by client, and what a deleted
// client was given.

// Family implements ports.RefreshTokenStore.
func (s *RefreshTokenStore) Family(ctx context.Context, familyID string) (domain.RefreshFamily, error) {
	var row refreshFamilyRow
	err := s.db.reader(ctx).Where("id = ?", familyID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.RefreshFamily{}, fmt.Errorf("refresh family: %w", domain.ErrSessionNotFound)
	}
	if err != nil {
		return domain.RefreshFamily{}, storeError("refresh family", err)
	}
	f, err := toDomainRefreshFamily(row)
	if err != nil {
		return domain.RefreshFamily{}, fmt.Errorf("refresh family: %w", err)
	}
	return f, nil
}

// Touch implements ports.RefreshTokenStore: one conditional update,
// active at at (not revoked, before its end and its idle limit) and last
// used more than ports.TouchInterval before.
func (s *RefreshTokenStore) Touch(ctx context.Context, familyID string, at time.Time) error {
	now := toMicros(at)
	err := s.db.writer(ctx).Model(&refreshFamilyRow{}).
		Where("id = ? AND revoked_at IS NULL AND expires_at > ? AND last_used_at < ? AND (idle_timeout = 0 OR last_used_at + idle_timeout > ?)",
			familyID, now, now-ports.TouchInterval.Microseconds(), now).
		Update("last_used_at", now).Error
	return storeError("touch refresh family", err)
}

// revokeClientSessions ends a user's open families granted to a client
// and answers their ids (updateSet), as revokeUser does. Arguments: the
// time, the user id, the client id.
var revokeClientSessions = setUpdate{
	returning: `UPDATE refresh_families SET revoked_at = ? WHERE user_id = ? AND client_id = ? AND revoked_at IS NULL RETURNING id`,
	choose:    `SELECT id FROM refresh_families WHERE user_id = ? AND client_id = ? AND revoked_at IS NULL FOR UPDATE`,
	update:    `UPDATE refresh_families SET revoked_at = ? WHERE id IN ?`,
}

// RevokeClientSessions implements ports.RefreshTokenStore. The ids
// returned are exactly the families this call ended.
func (s *RefreshTokenStore) RevokeClientSessions(ctx context.Context, userID domain.UserID, client domain.OAuthClientID, at time.Time) ([]string, error) {
	if client == "" {
		// userd's own sessions have no client: none is the client's.
		return nil, nil
	}
	args := []any{toMicros(at), string(userID), string(client)}
	ended, err := updateSet(ctx, s.db, revokeClientSessions, ownKey, args, args[1:], args[:1])
	if err != nil {
		return nil, storeError("revoke client's sessions", err)
	}
	return ended, nil
}

// OAuthClientRevoker is the SQL ports.OAuthClientRevoker.
type OAuthClientRevoker struct{ db *DB }

var _ ports.OAuthClientRevoker = (*OAuthClientRevoker)(nil)

// NewOAuthClientRevoker returns the client revoker of db.
func NewOAuthClientRevoker(db *DB) *OAuthClientRevoker { return &OAuthClientRevoker{db: db} }

// endedSessionRow is a family a client's revocation ended.
type endedSessionRow struct {
	ID     string `gorm:"column:id"`
	UserID string `gorm:"column:user_id"`
}

// revokeClient ends every open family granted to a client and answers
// them (updateSet). Arguments: the time, the client id.
var revokeClient = setUpdate{
	returning: `UPDATE refresh_families SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL RETURNING id, user_id`,
	choose:    `SELECT id, user_id FROM refresh_families WHERE client_id = ? AND revoked_at IS NULL FOR UPDATE`,
	update:    `UPDATE refresh_families SET revoked_at = ? WHERE id IN ?`,
}

// RevokeClient implements ports.OAuthClientRevoker, in one transaction (a
// savepoint of ctx's, the client's deletion): the client's sessions are
// revoked, its grants and authorization requests deleted. The client's
// deletion would delete the last two too (ON DELETE CASCADE); deleting
// them here ends them whatever the caller does next, as the port says.
func (r *OAuthClientRevoker) RevokeClient(ctx context.Context, client domain.OAuthClientID, at time.Time) ([]ports.EndedSession, error) {
	var ended []endedSessionRow
	err := r.db.transaction(ctx, func(tx *gorm.DB) error {
		ended = nil // the transaction may run again (see transaction)
		args := []any{toMicros(at), string(client)}
		var err error
		ended, err = updateSetIn(tx, r.db.dialect, revokeClient, func(e endedSessionRow) string { return e.ID },
			args, args[1:], args[:1])
		if err != nil {
			return err
		}
		if err := tx.Exec(`DELETE FROM oauth_grants WHERE client_id = ?`, string(client)).Error; err != nil {
			return err
		}
		return tx.Exec(`DELETE FROM oauth_auth_requests WHERE client_id = ?`, string(client)).Error
	})
	if err != nil {
		return nil, storeError("revoke client", err)
	}
	out := make([]ports.EndedSession, len(ended))
	for i, e := range ended {
		out[i] = ports.EndedSession{UserID: domain.UserID(e.UserID), ID: e.ID}
	}
	return out, nil
}
