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

// AuditListInput selects a page of the audit trail, as the client wrote
// it: Limit and After as in domain.ParsePage.
type AuditListInput struct {
	Limit string
	After string
}

// AuditPage is one page of the audit trail.
type AuditPage = domain.Paged[domain.AuditEvent, domain.AuditID]

// List returns a page of the audit trail, oldest first, to admins only.
// Like the user list, a malformed page is reported before a missing
// right: it is about the form of the request.
func (s *AuditService) List(ctx context.Context, actor *domain.Principal, in AuditListInput) (AuditPage, error) {
	if actor == nil {
		return AuditPage{}, domain.ErrUnauthenticated
	}
	if _, err := confirmActor(ctx, s.users, actor); err != nil {
		return AuditPage{}, err
	}
	page, err := domain.ParsePage(in.Limit, in.After, "an audit event id", domain.ParseAuditID)
	if err != nil {
		return AuditPage{}, err
	}
	if !actor.IsAdmin() {
		return AuditPage{}, domain.ErrForbidden
	}
	events, err := s.audit.List(ctx, page.Probe())
	if err != nil {
		return AuditPage{}, fmt.Errorf("list audit events: %w", err)
	}
	return domain.Cut(page, events, func(e domain.AuditEvent) domain.AuditID { return e.ID }), nil
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
