package application

import (
	"context"
	"fmt"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuditService reads the audit trail for admins and records the events
// that happen outside the other use cases (a key rotation by the CLI).
type AuditService struct {
	users  ports.UserRepository
	audit  ports.AuditLog
	events *Events
}

// NewAuditService returns an AuditService. events records what it is told
// about; audit is the log it lists.
func NewAuditService(users ports.UserRepository, audit ports.AuditLog, events *Events) *AuditService {
	return &AuditService{users: users, audit: audit, events: events}
}

// AuditListInput selects a page of the audit trail. Limit 0 means the default.
type AuditListInput struct {
	After string
	Limit int
}

// AuditPage is one page of the audit trail; Next is the cursor of the
// following page, empty on the last one.
type AuditPage struct {
	Events []domain.AuditEvent
	Next   domain.AuditID
}

// List returns a page of the audit trail, oldest first, to admins only.
// Like the user list, a malformed parameter is reported before a missing
// right: it is about the form of the request.
func (s *AuditService) List(ctx context.Context, actor *domain.Principal, in AuditListInput) (AuditPage, error) {
	if actor == nil {
		return AuditPage{}, domain.ErrUnauthenticated
	}
	if _, err := confirmActor(ctx, s.users, actor); err != nil {
		return AuditPage{}, err
	}
	q := ports.AuditQuery{Limit: in.Limit}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return AuditPage{}, &domain.ParameterError{Name: "limit", Reason: "must be between 1 and 200"}
	}
	if in.After != "" {
		after, err := domain.ParseAuditID(in.After)
		if err != nil {
			return AuditPage{}, &domain.ParameterError{Name: "after", Reason: "must be an audit event id"}
		}
		q.After = after
	}
	if !actor.IsAdmin() {
		return AuditPage{}, domain.ErrForbidden
	}
	limit := q.Limit
	// One row more than asked tells whether a next page exists.
	q.Limit++
	events, err := s.audit.List(ctx, q)
	if err != nil {
		return AuditPage{}, fmt.Errorf("list audit events: %w", err)
	}
	page := AuditPage{Events: events}
	if len(events) > limit {
		page.Events = events[:limit]
		page.Next = page.Events[limit-1].ID
	}
	return page, nil
}

// KeyRotated records that an operator added the access-token signing key
// kid. The error says the event could not be stored (the rotation itself
// happened); it has been logged and counted already.
func (s *AuditService) KeyRotated(ctx context.Context, kid, algorithm string) error {
	return s.events.record(ctx, domain.AuditEvent{
		Type:   domain.AuditKeyRotated,
		Detail: detail("kid", kid, "algorithm", algorithm, "origin", "operator"),
	})
}
