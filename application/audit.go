package application

import (
	"context"
	"fmt"

	"github.com/userd/userd/domain"
)

// AuditService reads the audit trail for admins.
type AuditService struct{ *base }

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
	if _, err := s.signedIn(ctx, actor); err != nil {
		return AuditPage{}, err
	}
	page, err := domain.ParsePage(in.Limit, in.After, "an audit event id", domain.ParseAuditID)
	if err != nil {
		return AuditPage{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return AuditPage{}, err
	}
	if s.audit == nil {
		return AuditPage{Page: page}, nil
	}
	events, err := s.audit.List(ctx, page.Probe())
	if err != nil {
		return AuditPage{}, fmt.Errorf("list audit events: %w", err)
	}
	return domain.Cut(page, events, func(e domain.AuditEvent) domain.AuditID { return e.ID }), nil
}
