package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// AuditLog stores the audit trail of security events. Events are never
// changed once stored.
type AuditLog interface {
	// Record stores the event. An id that is stored already is an error
	// (and changes nothing); so is a store that cannot write, wrapping
	// domain.ErrUnavailable when it may succeed later.
	Record(ctx context.Context, e domain.AuditEvent) error
	// List returns up to page.Limit events ordered by id ascending, which
	// is the order they happened in, those after page.After when it is set.
	// It may return an error wrapping domain.ErrUnavailable.
	List(ctx context.Context, page domain.Page[domain.AuditID]) ([]domain.AuditEvent, error)
}
