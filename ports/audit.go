package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// AuditQuery selects one page of the audit trail.
type AuditQuery struct {
	// Page is the cursor and the number of events wanted. The cursor is a
	// position, not necessarily a stored id: the page holds the events
	// past it in the order asked for.
	Page domain.Page[domain.AuditID]
	// UserID, when set, keeps the events whose actor or subject is the
	// user.
	UserID domain.UserID
	// Type, when set, keeps the events of the type.
	Type domain.AuditEventType
	// Newest lists by id descending, the newest event first, and the
	// cursor then means "older than"; by default the order is ascending,
	// the order the events happened in.
	Newest bool
}

// AuditLog stores the audit trail of security events. Events are never
// changed once stored.
type AuditLog interface {
	// Record stores the event. An id that is stored already is an error
	// (and changes nothing); so is a store that cannot write, wrapping
	// domain.ErrUnavailable when it may succeed later.
	Record(ctx context.Context, e domain.AuditEvent) error
	// List returns up to q.Page.Limit events that pass q's filters, by id
	// ascending, those after q.Page.After when it is set; with q.Newest,
	// by id descending, those before q.Page.After. It may return an error
	// wrapping domain.ErrUnavailable.
	List(ctx context.Context, q AuditQuery) ([]domain.AuditEvent, error)
}
