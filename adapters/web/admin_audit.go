package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The fields of the audit trail's filter form.
const (
	fieldUser = "user"
	fieldType = "type"
)

// adminAuditData is a page of the audit trail, newest first.
type adminAuditData struct {
	Types  []typeChoice
	Events []eventRow
	// Next is the link of the older events, empty on the last page; First
	// goes back to the newest, empty on them.
	Next, First string
	Filtered    bool
}

// typeChoice is an option of the event type's <select>.
type typeChoice struct {
	Value    string
	Selected bool
}

// eventRow is one line of the audit trail.
type eventRow struct {
	// Time is shown; ISO is its machine-readable form (<time datetime>).
	Time, ISO, Type string
	Actor, Subject  userRef
	IP, Detail      string
}

// userRef names a user of an event: their email, linked to their page;
// the id alone for a deleted account; "—" for none (anonymous, the
// operator).
type userRef struct {
	Path, Label string
}

// adminAudit shows the audit trail, newest first, filtered by a user (an
// id, or an email that names one) and by the type of event.
func (p *Pages) adminAudit(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx := r.Context()
	q := r.URL.Query()
	rawUser, typ, after := strings.TrimSpace(q.Get(fieldUser)), q.Get(fieldType), q.Get(fieldAfter)
	pg := newPage(adminArea, &v, tmplAdminAudit, "Audit trail")
	pg.Nav = adminAuditPath
	pg.Form = url.Values{fieldUser: {rawUser}, fieldType: {typ}}
	d := adminAuditData{Filtered: rawUser != "" || typ != ""}
	for _, t := range domain.AuditEventTypes {
		d.Types = append(d.Types, typeChoice{Value: string(t), Selected: string(t) == typ})
	}
	if after != "" {
		d.First = listPath(adminAuditPath, fieldUser, rawUser, fieldType, typ)
	}
	var user domain.UserID
	if rawUser != "" {
		var err error
		if user, err = p.userByIDOrEmail(ctx, v, rawUser); err != nil {
			if !errors.Is(err, domain.ErrUserNotFound) {
				p.adminFailed(w, r, &v, err)
				return
			}
			pg = pg.AddError(fieldUser, "No user has this email address or id.")
			pg.Data = d
			p.renderConsole(w, r, http.StatusBadRequest, pg)
			return
		}
	}
	list, err := p.svc.Audit.List(ctx, v.principal, auditListInput(after, user, typ))
	if err != nil {
		pg, ok := listFailed(pg, err)
		if !ok {
			p.adminFailed(w, r, &v, err)
			return
		}
		pg.Data = d
		p.renderConsole(w, r, http.StatusBadRequest, pg)
		return
	}
	names := userNames{p: p, v: v, seen: map[domain.UserID]userRef{}}
	for _, e := range list.Items {
		row := eventRow{Time: e.Time.UTC().Format("2006-01-02 15:04:05Z"), ISO: e.Time.UTC().Format(time.RFC3339Nano),
			Type: string(e.Type), IP: e.ClientIP, Detail: e.Detail}
		if row.Actor, err = names.ref(ctx, e.ActorID); err == nil {
			row.Subject, err = names.ref(ctx, e.SubjectID)
		}
		if err != nil {
			p.adminFailed(w, r, &v, err)
			return
		}
		d.Events = append(d.Events, row)
	}
	if list.Next != "" {
		d.Next = listPath(adminAuditPath, fieldUser, rawUser, fieldType, typ, fieldAfter, string(list.Next))
	}
	pg.Data = d
	p.renderConsole(w, r, http.StatusOK, pg)
}

// auditListInput is the use case's input for a page of the trail: newest
// first, of the user (as actor or subject) and of the type when set.
func auditListInput(after string, user domain.UserID, typ string) application.AuditListInput {
	return application.AuditListInput{After: after, UserID: string(user), Type: typ, Order: application.AuditNewest}
}

// userByIDOrEmail is the user that raw names: a user id as it is (the
// trail keeps the events of deleted accounts, which only their id finds),
// or the account with the email, found by the exact filter of the user
// list; domain.ErrUserNotFound when none has it.
func (p *Pages) userByIDOrEmail(ctx context.Context, v visitor, raw string) (domain.UserID, error) {
	if id, err := domain.ParseUserID(raw); err == nil {
		return id, nil
	}
	list, err := p.svc.Users.List(ctx, v.principal, application.ListInput{Email: raw, Limit: "1"})
	if err != nil {
		return "", err
	}
	if len(list.Items) == 0 {
		return "", domain.ErrUserNotFound
	}
	return list.Items[0].ID, nil
}

// userNames looks up the users of a page of events once each.
type userNames struct {
	p    *Pages
	v    visitor
	seen map[domain.UserID]userRef
}

func (n userNames) ref(ctx context.Context, id domain.UserID) (userRef, error) {
	if id == "" {
		return userRef{Label: "—"}, nil
	}
	if ref, ok := n.seen[id]; ok {
		return ref, nil
	}
	ref := userRef{Label: string(id) + " (deleted)"}
	u, err := n.p.svc.Users.Get(ctx, n.v.principal, string(id))
	switch {
	case err == nil:
		ref = userRef{Path: userPath(u.ID), Label: string(u.Email)}
	case !errors.Is(err, domain.ErrUserNotFound):
		return userRef{}, err
	}
	n.seen[id] = ref
	return ref, nil
}
