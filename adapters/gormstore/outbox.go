package gormstore

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// outboxRow mirrors the outbox_messages table.
type outboxRow struct {
	ID      string `gorm:"column:id;primaryKey"`
	Kind    string `gorm:"column:kind"`
	Payload []byte `gorm:"column:payload"`
	// Secret says Payload is sealed by the outbox's SecretBox.
	Secret        bool   `gorm:"column:secret"`
	CreatedMicros int64  `gorm:"column:created_at"`
	NextMicros    int64  `gorm:"column:next_attempt_at"`
	Attempts      int    `gorm:"column:attempts"`
	LastError     string `gorm:"column:last_error"`
	ClaimedMicros *int64 `gorm:"column:claimed_until"`
	// TraceContext is NULL when the message keeps none (traces off).
	TraceContext *string `gorm:"column:trace_context"`
}

func (outboxRow) TableName() string { return "outbox_messages" }

// key is the row's primary key.
func (r outboxRow) key() string { return r.ID }

// outboxColumns are the columns a claim returns, named (see keyColumns):
// claimed_until is the store's own business.
const outboxColumns = "id, kind, payload, secret, created_at, next_attempt_at, attempts, last_error, trace_context"

// fromDomainOutboxMessage is the row of m, whose payload is stored as
// payload (sealed when m is secret).
func fromDomainOutboxMessage(m domain.OutboxMessage, payload []byte) outboxRow {
	return outboxRow{
		ID:            string(m.ID),
		Kind:          string(m.Kind),
		Payload:       payload,
		Secret:        m.Secret,
		CreatedMicros: toMicros(m.CreatedAt),
		NextMicros:    toMicros(m.NextAttemptAt),
		Attempts:      m.Attempts,
		LastError:     m.LastError,
		TraceContext:  nullString(m.TraceContext),
	}
}

// toDomainOutboxMessage is the message of r, whose payload is payload once
// opened.
func toDomainOutboxMessage(r outboxRow, payload []byte) domain.OutboxMessage {
	return domain.OutboxMessage{
		ID:            domain.OutboxID(r.ID),
		Kind:          domain.OutboxKind(r.Kind),
		Payload:       payload,
		Secret:        r.Secret,
		CreatedAt:     fromMicros(r.CreatedMicros),
		NextAttemptAt: fromMicros(r.NextMicros),
		Attempts:      r.Attempts,
		LastError:     r.LastError,
		TraceContext:  fromNullString(r.TraceContext),
	}
}

// Outbox is the SQL ports.Outbox, shared by every node using the
// database. A secret payload is sealed by its SecretBox with the message's
// id as associated data, as KeyStore seals secrets.
type Outbox struct {
	db  *DB
	box ports.SecretBox
}

var _ ports.Outbox = (*Outbox)(nil)

// NewOutbox returns the outbox of db, sealing and opening secret payloads
// with box.
func NewOutbox(db *DB, box ports.SecretBox) *Outbox { return &Outbox{db: db, box: box} }

// Enqueue implements ports.Outbox: the payload of a secret message is
// sealed before it is stored. An id that exists already is an error.
func (o *Outbox) Enqueue(ctx context.Context, m domain.OutboxMessage) error {
	payload := m.Payload
	if m.Secret {
		sealed, err := o.box.Seal(m.Payload, []byte(m.ID))
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", m.ID, err)
		}
		payload = sealed
	}
	if payload == nil {
		// The column is NOT NULL; an empty payload is empty, not absent.
		payload = []byte{}
	}
	row := fromDomainOutboxMessage(m, payload)
	err := o.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	return storeError("enqueue "+string(m.ID), err)
}

// claimSQL leases the due messages that no lease holds, oldest first, and
// returns them, in one statement. %s is the locking clause of the inner
// SELECT: on PostgreSQL, FOR UPDATE SKIP LOCKED, so that concurrent claims
// on any node pass over the rows another claim is taking instead of
// waiting for it, and a row whose lease a claim committed meanwhile is
// checked again (and left out); on SQLite none, as the immediate
// transaction holds the write lock. The selection is a MATERIALIZED CTE:
// as an IN subquery, PostgreSQL may run it more than once and lease more
// than the limit. Arguments: now, now, the limit, the lease's end.
const claimSQL = `
WITH picked AS MATERIALIZED (
	SELECT id FROM outbox_messages
	WHERE next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
	ORDER BY created_at, id
	LIMIT ?%s
)
UPDATE outbox_messages SET claimed_until = ?
WHERE id IN (SELECT id FROM picked)
RETURNING ` + outboxColumns

// claims are Claim's statement (updateSet) in the form of each dialect,
// indexed by it: the choice of the rows is locked, and locked rows
// skipped, on PostgreSQL and MySQL only, and MySQL chooses then leases
// (mysqlClaimSQL). Arguments: now, now, the limit (the choice's), the
// lease's end (the SET's).
var claims = [...]setUpdate{
	dialectSQLite:   {returning: fmt.Sprintf(claimSQL, "")},
	dialectPostgres: {returning: fmt.Sprintf(claimSQL, "\n\tFOR UPDATE SKIP LOCKED")},
	dialectMySQL:    {choose: mysqlClaimSQL, update: `UPDATE outbox_messages SET claimed_until = ? WHERE id IN ?`},
}

// Claim implements ports.Outbox: one statement in a transaction, whose
// messages are opened before it commits. A secret payload that does not
// open (sealed under a secret key the box lacks, or altered) fails the
// claim with the box's error, naming the message, and leases nothing. A
// limit below 1 claims nothing.
func (o *Outbox) Claim(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]domain.OutboxMessage, error) {
	if limit < 1 {
		return []domain.OutboxMessage{}, nil
	}
	args := []any{toMicros(now), toMicros(now), limit, toMicros(now.Add(lease))}
	var (
		out     []domain.OutboxMessage
		openErr error
	)
	err := o.db.transaction(ctx, func(tx *gorm.DB) error {
		rows, err := updateSetIn(tx, o.db.dialect, claims[o.db.dialect], outboxRow.key, args, args[:3], args[3:])
		if err != nil {
			return err
		}
		// RETURNING keeps no order.
		slices.SortFunc(rows, func(a, b outboxRow) int {
			return cmp.Or(cmp.Compare(a.CreatedMicros, b.CreatedMicros), cmp.Compare(a.ID, b.ID))
		})
		out = make([]domain.OutboxMessage, len(rows))
		for i, row := range rows {
			payload := row.Payload
			if row.Secret {
				if payload, openErr = o.box.Open(row.Payload, []byte(row.ID)); openErr != nil {
					openErr = fmt.Errorf("claim outbox message %s: %w", row.ID, openErr)
					return openErr
				}
			}
			out[i] = toDomainOutboxMessage(row, payload)
		}
		return nil
	})
	switch {
	case openErr != nil:
		return nil, openErr
	case err != nil:
		return nil, storeError("claim outbox messages", err)
	}
	return out, nil
}

// mysqlClaimSQL picks the messages of a claim on MySQL, which has neither
// UPDATE … RETURNING nor a LIMIT in an IN subquery: the rows are read
// locked, skipping those another claim has locked, then leased by id in
// the same transaction. Arguments: now, now, the limit.
const mysqlClaimSQL = `SELECT ` + outboxColumns + ` FROM outbox_messages
WHERE next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?)
ORDER BY created_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED`

// Done implements ports.Outbox.
func (o *Outbox) Done(ctx context.Context, id domain.OutboxID) error {
	err := o.db.writer(ctx).Where("id = ?", string(id)).Delete(&outboxRow{}).Error
	return storeError("outbox message done", err)
}

// Retry implements ports.Outbox: the message is due at next, its lease
// ended. A message that is gone (sent meanwhile by a node that claimed it
// after the lease ended) is left gone.
func (o *Outbox) Retry(ctx context.Context, id domain.OutboxID, next time.Time, attempts int, lastError string) error {
	err := o.db.writer(ctx).Model(&outboxRow{}).Where("id = ?", string(id)).
		Updates(map[string]any{
			"next_attempt_at": toMicros(next),
			"attempts":        attempts,
			"last_error":      lastError,
			"claimed_until":   nil,
		}).Error
	return storeError("retry outbox message", err)
}

// Backlog implements ports.Outbox: every stored message counts, claimed
// or not.
func (o *Outbox) Backlog(ctx context.Context) (int, time.Time, error) {
	var res struct {
		N      int
		Oldest sql.NullInt64
	}
	err := o.db.reader(ctx).Raw(`SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM outbox_messages`).Scan(&res).Error
	if err != nil {
		return 0, time.Time{}, storeError("outbox backlog", err)
	}
	if !res.Oldest.Valid {
		return res.N, time.Time{}, nil
	}
	return res.N, fromMicros(res.Oldest.Int64), nil
}
