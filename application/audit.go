package application

import (
	"context"
	"fmt"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuditService reads the audit trail for admins.
type AuditService struct {
	users ports.UserRepository
	// audit is nil when the deployment keeps no events.
	audit ports.AuditLog
}

// AuditListInput selects a page of the audit trail, as the client wrote
// it: Limit and After as in domain.ParsePage; UserID keeps the events of
// one user, as actor or subject; Type the events of one type; Order is
// AuditOldest (also when empty) or AuditNewest.
type AuditListInput struct {
	Limit  string
	After  string
	UserID string
	Type   string
	Order  string
}

// The orders of the audit trail.
const (
	AuditOldest = "oldest"
	AuditNewest = "newest"
)

// The filters of the audit trail, as validation errors name them.
const (
	FieldUserID = "userId"
	FieldType   = "type"
	FieldOrder  = "order"
)

// AuditPage is one page of the audit trail.
type AuditPage = domain.Paged[domain.AuditEvent, domain.AuditID]

// List returns a page of the audit trail, oldest first unless the input
// asks for the newest first, to admins only. Like the user list, a
// malformed page (a domain.PageError) or filter (a domain.ValidationError)
// is reported before a missing right: it is about the form of the
// request.
func (s *AuditService) List(ctx context.Context, actor *domain.Principal, in AuditListInput) (AuditPage, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return AuditPage{}, err
	}
	page, err := domain.ParsePage(in.Limit, in.After, "an audit event id", domain.ParseAuditID)
	if err != nil {
		return AuditPage{}, err
	}
	q, err := auditQuery(in)
	if err != nil {
		return AuditPage{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return AuditPage{}, err
	}
	if s.audit == nil {
		return AuditPage{Page: page}, nil
	}
	q.Page = page.Probe()
	events, err := s.audit.List(ctx, q)
	if err != nil {
		return AuditPage{}, fmt.Errorf("list audit events: %w", err)
	}
	return domain.Cut(page, events, func(e domain.AuditEvent) domain.AuditID { return e.ID }), nil
}

// auditQuery reads the filters and the order of in, every bad one named
// in one validation error. A malformed user id is a field of that error,
// like every other filter, rather than ErrInvalidID: that error names no
// field, and is what a malformed id in a path gets.
func auditQuery(in AuditListInput) (ports.AuditQuery, error) {
	var q ports.AuditQuery
	verr := &domain.ValidationError{}
	if in.UserID != "" {
		id, err := domain.ParseUserID(in.UserID)
		if err != nil {
			verr.Add(FieldUserID, "must be a user id: 24 lowercase hexadecimal characters")
		}
		q.UserID = id
	}
	if in.Type != "" {
		typ, ok := domain.ParseAuditEventType(in.Type)
		if !ok {
			verr.Add(FieldType, "must be an audit event type, such as "+string(domain.AuditLoginFailed))
		}
		q.Type = typ
	}
	switch in.Order {
	case "", AuditOldest:
	case AuditNewest:
		q.Newest = true
	default:
		verr.Add(FieldOrder, "must be "+AuditNewest+" or "+AuditOldest)
	}
	return q, verr.Err()
}
