package gormstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// passkeyRow mirrors the passkeys table.
type passkeyRow struct {
	ID            string `gorm:"column:id;primaryKey"`
	UserID        string `gorm:"column:user_id"`
	Name          string `gorm:"column:name"`
	CredentialID  []byte `gorm:"column:credential_id"`
	Credential    []byte `gorm:"column:credential"`
	SignCount     int64  `gorm:"column:sign_count"`
	CreatedMicros int64  `gorm:"column:created_at"`
	UsedMicros    *int64 `gorm:"column:last_used_at"`
}

func (passkeyRow) TableName() string { return "passkeys" }

// passkeyColumns are the columns of passkeyRow, named (see keyColumns).
var passkeyColumns = []string{"id", "user_id", "name", "credential_id", "credential", "sign_count", "created_at", "last_used_at"}

func fromDomainPasskey(p domain.Passkey) passkeyRow {
	return passkeyRow{
		ID:            string(p.ID),
		UserID:        string(p.UserID),
		Name:          p.Name,
		CredentialID:  nonNil(p.CredentialID),
		Credential:    nonNil(p.Credential),
		SignCount:     int64(p.SignCount),
		CreatedMicros: toMicros(p.CreatedAt),
		UsedMicros:    toMicrosPtr(p.LastUsedAt),
	}
}

func toDomainPasskey(r passkeyRow) domain.Passkey {
	return domain.Passkey{
		ID:           domain.PasskeyID(r.ID),
		UserID:       domain.UserID(r.UserID),
		Name:         r.Name,
		CredentialID: r.CredentialID,
		Credential:   r.Credential,
		SignCount:    uint32(r.SignCount), //nolint:gosec // G115: the column holds what a uint32 gave it
		CreatedAt:    fromMicros(r.CreatedMicros),
		LastUsedAt:   fromMicrosPtr(r.UsedMicros),
	}
}

// passkeyCeremonyRow mirrors the passkey_ceremonies table.
type passkeyCeremonyRow struct {
	ID      string `gorm:"column:id;primaryKey"`
	Purpose string `gorm:"column:purpose"`
	// UserID is NULL for a ceremony of no user (a discoverable login).
	UserID        *string `gorm:"column:user_id"`
	State         []byte  `gorm:"column:state"`
	CreatedMicros int64   `gorm:"column:created_at"`
	ExpiresMicros int64   `gorm:"column:expires_at"`
}

func (passkeyCeremonyRow) TableName() string { return "passkey_ceremonies" }

// ceremonyColumns are the columns of passkeyCeremonyRow, named (see
// keyColumns).
const ceremonyColumns = "id, purpose, user_id, state, created_at, expires_at"

func fromDomainCeremony(c domain.PasskeyCeremony) passkeyCeremonyRow {
	r := passkeyCeremonyRow{
		ID:            c.ID,
		Purpose:       string(c.Purpose),
		State:         nonNil(c.State),
		CreatedMicros: toMicros(c.CreatedAt),
		ExpiresMicros: toMicros(c.ExpiresAt),
	}
	if c.UserID != "" {
		user := string(c.UserID)
		r.UserID = &user
	}
	return r
}

func toDomainCeremony(r passkeyCeremonyRow) domain.PasskeyCeremony {
	c := domain.PasskeyCeremony{
		ID:        r.ID,
		Purpose:   domain.CeremonyPurpose(r.Purpose),
		State:     r.State,
		CreatedAt: fromMicros(r.CreatedMicros),
		ExpiresAt: fromMicros(r.ExpiresMicros),
	}
	if r.UserID != nil {
		c.UserID = domain.UserID(*r.UserID)
	}
	return c
}

// nonNil returns b, or an empty slice for nil: the byte columns are NOT
// NULL, and empty is not absent.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// PasskeyStore is the SQL ports.PasskeyStore.
type PasskeyStore struct{ db *DB }

var _ ports.PasskeyStore = (*PasskeyStore)(nil)

// NewPasskeyStore returns the passkey store of db.
func NewPasskeyStore(db *DB) *PasskeyStore { return &PasskeyStore{db: db} }

// CreatePasskey implements ports.PasskeyStore.
func (s *PasskeyStore) CreatePasskey(ctx context.Context, p domain.Passkey) error {
	row := fromDomainPasskey(p)
	err := s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	switch {
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("create passkey: %w", domain.ErrUserNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		// Two unique keys can clash: the credential id, or (a caller bug)
		// the passkey's id. Only the first is the client's doing.
		if _, byCredErr := s.PasskeyByCredentialID(ctx, p.CredentialID); byCredErr == nil {
			return fmt.Errorf("create passkey: %w", domain.ErrPasskeyExists)
		}
	}
	return storeError("create passkey", err)
}

// Passkeys implements ports.PasskeyStore: oldest first, the id breaking
// ties.
func (s *PasskeyStore) Passkeys(ctx context.Context, user domain.UserID) ([]domain.Passkey, error) {
	var rows []passkeyRow
	err := s.db.reader(ctx).Select(passkeyColumns).Where("user_id = ?", string(user)).Order("created_at, id").Find(&rows).Error
	if err != nil {
		return nil, storeError("passkeys", err)
	}
	out := make([]domain.Passkey, len(rows))
	for i, row := range rows {
		out[i] = toDomainPasskey(row)
	}
	return out, nil
}

// PasskeyByCredentialID implements ports.PasskeyStore.
func (s *PasskeyStore) PasskeyByCredentialID(ctx context.Context, credentialID []byte) (domain.Passkey, error) {
	var rows []passkeyRow
	err := s.db.reader(ctx).Select(passkeyColumns).Where("credential_id = ?", nonNil(credentialID)).Limit(1).Find(&rows).Error
	if err != nil {
		return domain.Passkey{}, storeError("passkey by credential id", err)
	}
	if len(rows) == 0 {
		return domain.Passkey{}, fmt.Errorf("passkey by credential id: %w", domain.ErrPasskeyNotFound)
	}
	return toDomainPasskey(rows[0]), nil
}

// recordUseSQL and recordZeroUseSQL store a verified assertion in one
// conditional statement: the counter must move forward, or (recordZero)
// stay at 0 for an authenticator that keeps none. Of two concurrent
// assertions with one counter, the second finds it moved (on PostgreSQL
// after waiting for the first's row lock) and changes nothing. Arguments:
// the counter, the credential, the time, the id, (recordUseSQL:) the
// counter.
const (
	recordUseSQL     = `UPDATE passkeys SET sign_count = ?, credential = ?, last_used_at = ? WHERE id = ? AND sign_count < ?`
	recordZeroUseSQL = `UPDATE passkeys SET sign_count = ?, credential = ?, last_used_at = ? WHERE id = ? AND sign_count = 0`
)

// RecordPasskeyUse implements ports.PasskeyStore.
func (s *PasskeyStore) RecordPasskeyUse(ctx context.Context, id domain.PasskeyID, signCount uint32, credential []byte, at time.Time) (bool, error) {
	n := int64(signCount)
	args := []any{n, nonNil(credential), toMicros(at), string(id)}
	query := recordZeroUseSQL
	if n > 0 {
		query, args = recordUseSQL, append(args, n)
	}
	res := s.db.writer(ctx).Exec(query, args...)
	if res.Error != nil {
		return false, storeError("record passkey use", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// renamePasskey renames a passkey of one user and returns it, in one
// write (writeRow): the user id in the condition keeps a request from
// renaming another user's passkey, and the answer is the row as written,
// with no second read that a concurrent delete could slip between (on
// MySQL, the update's lock keeps it out). Arguments: the name, the id,
// the user id.
var renamePasskey = newRowUpdate("passkeys", "name = ?", "id = ? AND user_id = ?", strings.Join(passkeyColumns, ", "), "id", 1)

// RenamePasskey implements ports.PasskeyStore.
func (s *PasskeyStore) RenamePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID, name string) (domain.Passkey, error) {
	row, ok, err := writeRow[passkeyRow](ctx, s.db, renamePasskey, name, string(id), string(user))
	if err != nil {
		return domain.Passkey{}, storeError("rename passkey", err)
	}
	// No row came back: no passkey of the user has the id.
	if !ok {
		return domain.Passkey{}, fmt.Errorf("rename passkey: %w", domain.ErrPasskeyNotFound)
	}
	return toDomainPasskey(row), nil
}

// DeletePasskey implements ports.PasskeyStore.
func (s *PasskeyStore) DeletePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID) error {
	res := s.db.writer(ctx).Where("id = ? AND user_id = ?", string(id), string(user)).Delete(&passkeyRow{})
	if res.Error != nil {
		return storeError("delete passkey", res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("delete passkey: %w", domain.ErrPasskeyNotFound)
	}
	return nil
}

// DeletePasskeys implements ports.PasskeyStore.
func (s *PasskeyStore) DeletePasskeys(ctx context.Context, user domain.UserID) (int, error) {
	res := s.db.writer(ctx).Where("user_id = ?", string(user)).Delete(&passkeyRow{})
	if res.Error != nil {
		return 0, storeError("delete passkeys", res.Error)
	}
	return int(res.RowsAffected), nil
}

// CreateCeremony implements ports.PasskeyStore. It first drops the
// ceremonies that expired before c began, which nothing can finish any
// more: anyone may begin a login ceremony, and the table must not grow
// with them.
func (s *PasskeyStore) CreateCeremony(ctx context.Context, c domain.PasskeyCeremony) error {
	row := fromDomainCeremony(c)
	return createAfterExpired(ctx, s.db, "create passkey ceremony", &row, row.CreatedMicros)
}

// takeCeremony removes a ceremony that may be finished and returns it, in
// one write (writeRow): of two concurrent takes, on any nodes, the second
// finds no row (on PostgreSQL and MySQL it waits for the first's row
// lock, then finds the row gone). Arguments: the id, the purpose, now.
var takeCeremony = newRowDelete("passkey_ceremonies", "id = ? AND purpose = ? AND expires_at > ?", ceremonyColumns, "id", 0)

// TakeCeremony implements ports.PasskeyStore. A ceremony of another
// purpose, or expired, is left in place: it is of no use to the caller,
// and taking it would let a wrong request spoil the right one.
func (s *PasskeyStore) TakeCeremony(ctx context.Context, id string, purpose domain.CeremonyPurpose, now time.Time) (domain.PasskeyCeremony, error) {
	row, ok, err := writeRow[passkeyCeremonyRow](ctx, s.db, takeCeremony, id, string(purpose), toMicros(now))
	if err != nil {
		return domain.PasskeyCeremony{}, storeError("take passkey ceremony", err)
	}
	if !ok {
		return domain.PasskeyCeremony{}, fmt.Errorf("take passkey ceremony: %w", domain.ErrInvalidPasskey)
	}
	return toDomainCeremony(row), nil
}
