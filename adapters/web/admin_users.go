package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The fields of the console's filters: the query parameters of the
// API's lists.
const (
	fieldEmailPrefix = "emailPrefix"
	fieldAfter       = "after"
)

// adminUsersNotices are the notices of the user list.
var adminUsersNotices = map[string]string{"deleted": "The user is deleted, and their sessions with them."}

// adminUsersData is the user list: a page of users ordered by id, as
// UserService.List returns them.
type adminUsersData struct {
	Users []userRow
	// Next is the link of the next page, empty on the last one; First
	// goes back to the first page of the search, empty on it.
	Next, First string
	// Searched is true when the list is filtered.
	Searched bool
}

// userRow is one line of the user list.
type userRow struct {
	Path, Email, Name, Profiles, Verified, Disabled, MFA, Created string
}

// adminUsers lists the users, a page at a time, those whose email starts
// with emailPrefix when the search form is used.
func (p *Pages) adminUsers(w http.ResponseWriter, r *http.Request, v visitor) {
	q := r.URL.Query()
	prefix, after := q.Get(fieldEmailPrefix), q.Get(fieldAfter)
	pg := newPage(adminArea, &v, tmplAdminUsers, "Users")
	pg.Nav = adminUsersPath
	pg.Notice = noticeOf(r, adminUsersNotices)
	pg.Form = url.Values{fieldEmailPrefix: {prefix}}
	d := adminUsersData{Searched: prefix != ""}
	if after != "" {
		d.First = listPath(adminUsersPath, fieldEmailPrefix, prefix)
	}
	list, err := p.svc.Users.List(r.Context(), v.principal, userListInput(prefix, after))
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
	for _, u := range list.Items {
		d.Users = append(d.Users, userRow{Path: userPath(u.ID), Email: string(u.Email), Name: u.Name,
			Profiles: strings.Join(u.Profiles.Strings(), ", "), Verified: yesNo(u.EmailVerified),
			Disabled: yesNo(u.Disabled), MFA: onOff(u.MFAEnabled), Created: consoleTime(u.CreatedAt)})
	}
	if list.Next != "" {
		d.Next = listPath(adminUsersPath, fieldEmailPrefix, prefix, fieldAfter, string(list.Next))
	}
	pg.Data = d
	p.renderConsole(w, r, http.StatusOK, pg)
}

// userListInput is the use case's input for a page of the list.
func userListInput(prefix, after string) application.ListInput {
	return application.ListInput{After: after, EmailPrefix: prefix}
}

// listPath is the address of a page of a list: path with the query of
// the name and value pairs whose value is set (the search or filter, and
// the cursor of the page).
func listPath(path string, pairs ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			q.Set(pairs[i], pairs[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// listFailed puts the use case's refusal of a list's query on the page:
// a field's message for a bad filter (the use case's ValidationError) or
// a bad page cursor (a link that was tampered with: there is no input for
// it, the message offers the first page). ok is false for any other
// error.
func listFailed(pg page, err error) (page, bool) {
	if verr, ok := errors.AsType[*domain.ValidationError](err); ok {
		for _, f := range verr.Fields {
			pg = pg.AddError(f.Field, fieldMessage(f.Field, f.Message))
		}
		return pg, true
	}
	if perr, ok := errors.AsType[*domain.PageError](err); ok {
		if perr.Bound == fieldAfter {
			return pg.AddError(fieldAfter, "This page link is not valid. Start again from the first page."), true
		}
		return pg.AddError("", "This page link is not valid. Start again from the first page."), true
	}
	return pg, false
}

// onOff shows whether a setting is on.
func onOff(b bool) string {
	if b {
		return "On"
	}
	return "Off"
}
