package gormstore

import (
	"context"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// auditEventRow mirrors the audit_events table. Absent ids and request
// metadata are stored as empty strings, not NULL: they are plain text to
// an auditor, and a NOT NULL column cannot be read back as something else.
type auditEventRow struct {
	ID             string `gorm:"column:id;primaryKey"`
	OccurredMicros int64  `gorm:"column:occurred_at"`
	Type           string `gorm:"column:type"`
	ActorID        string `gorm:"column:actor_id"`
	SubjectID      string `gorm:"column:subject_id"`
	ClientIP       string `gorm:"column:client_ip"`
	RequestID      string `gorm:"column:request_id"`
	Detail         string `gorm:"column:detail"`
}

func (auditEventRow) TableName() string { return "audit_events" }

func fromDomainAuditEvent(e domain.AuditEvent) auditEventRow {
	return auditEventRow{
		ID:             string(e.ID),
		OccurredMicros: toMicros(e.Time),
		Type:           string(e.Type),
		ActorID:        string(e.ActorID),
		SubjectID:      string(e.SubjectID),
		ClientIP:       e.ClientIP,
		RequestID:      e.RequestID,
		Detail:         e.Detail,
	}
}

func toDomainAuditEvent(r auditEventRow) domain.AuditEvent {
	return domain.AuditEvent{
		ID:        domain.AuditID(r.ID),
		Time:      fromMicros(r.OccurredMicros),
		Type:      domain.AuditEventType(r.Type),
		ActorID:   domain.UserID(r.ActorID),
		SubjectID: domain.UserID(r.SubjectID),
		ClientIP:  r.ClientIP,
		RequestID: r.RequestID,
		Detail:    r.Detail,
	}
}

// AuditLog is the SQL ports.AuditLog.
type AuditLog struct{ db *DB }

var _ ports.AuditLog = (*AuditLog)(nil)

// NewAuditLog returns the audit log of db.
func NewAuditLog(db *DB) *AuditLog { return &AuditLog{db: db} }

// Record implements ports.AuditLog with one INSERT.
func (l *AuditLog) Record(ctx context.Context, e domain.AuditEvent) error {
	row := fromDomainAuditEvent(e)
	return storeError("record audit event", l.db.writer(ctx).Create(&row).Error)
}

// List implements ports.AuditLog: a keyset page over the primary key,
// either way. A Limit below 1 is taken as 1. The filters have indexes of
// their own that end with the id, so that the cursor bounds what is read
// (migration 15): (type, id), and for a user (actor_id, id) and
// (subject_id, id), whose two ranges both planners merge.
func (l *AuditLog) List(ctx context.Context, q ports.AuditQuery) ([]domain.AuditEvent, error) {
	tx := l.db.reader(ctx).Model(&auditEventRow{})
	cursor, order := "id > ?", "id"
	if q.Newest {
		cursor, order = "id < ?", "id DESC"
	}
	if q.Page.After != "" {
		tx = tx.Where(cursor, string(q.Page.After))
	}
	if q.UserID != "" {
		tx = tx.Where("(actor_id = ? OR subject_id = ?)", string(q.UserID), string(q.UserID))
	}
	if q.Type != "" {
		tx = tx.Where("type = ?", string(q.Type))
	}
	var rows []auditEventRow
	if err := tx.Order(order).Limit(max(q.Page.Limit, 1)).Find(&rows).Error; err != nil {
		return nil, storeError("list audit events", err)
	}
	out := make([]domain.AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = toDomainAuditEvent(r)
	}
	return out, nil
}
