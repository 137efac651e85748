package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// routeAccountSessions routes the sessions page: the list, and signing
// out one session or every other one.
func (p *Pages) routeAccountSessions() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountSessionsPath, p.guard(a, p.sessionsPage))
	p.mux.HandleFunc("POST "+accountSessionsPath+"/{sid}/sign-out", p.guard(a, p.signOutSession))
	p.mux.HandleFunc("POST "+accountSessionsPath+"/sign-out-others", p.guard(a, p.signOutOthers))
}

// sessionsData is what the sessions page shows.
type sessionsData struct {
	Sessions []sessionRow
	// Others is true when there is a session besides this one.
	Others bool
}

// sessionsPage lists the visitor's sessions, newest first.
func (p *Pages) sessionsPage(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.sessionsForm(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

func (p *Pages) sessionsForm(r *http.Request, v visitor) (page, error) {
	list, err := p.svc.Sessions.List(r.Context(), v.principal, string(v.user.ID))
	if err != nil {
		return page{}, err
	}
	d := sessionsData{Sessions: make([]sessionRow, len(list))}
	for i, s := range list {
		d.Sessions[i] = newSessionRow(s)
		d.Others = d.Others || !s.Current
	}
	pg := accountPage(r, &v, tmplAccountSessions, "Sessions", accountSessionsPath)
	pg.Data = d
	return pg, nil
}

// signOutSession ends one session of the visitor. Ending this browser's
// own (the page offers no button for it, but a form may send it) signs
// the visitor out.
func (p *Pages) signOutSession(w http.ResponseWriter, r *http.Request, v visitor) {
	sid := r.PathValue("sid")
	err := p.svc.Sessions.Revoke(r.Context(), v.principal, string(v.user.ID), sid)
	switch {
	case errors.Is(err, domain.ErrSessionNotFound):
		seeOther(w, r, accountSessionsPath, "session-gone")
	case err != nil:
		p.accountFail(w, r, v, err)
	case sid == v.principal.Session.ID:
		clearSessionCookies(w)
		seeOther(w, r, accountArea.LoginPath(), "signed-out")
	default:
		seeOther(w, r, accountSessionsPath, "session-ended")
	}
}

// signOutOthers ends every session of the visitor but this browser's,
// once the box that says so is ticked (the confirm step). Each is ended
// as the per-session button does (SessionService.Revoke, one audit event
// each): RevokeAll would end this one too, which is not what "everywhere
// else" means. A session opened while this runs lives on.
func (p *Pages) signOutOthers(w http.ResponseWriter, r *http.Request, v visitor) {
	if r.PostForm.Get(fieldUnderstood) != "yes" {
		verr := &domain.ValidationError{}
		verr.Add(fieldUnderstood, "must be ticked to sign out your other sessions")
		p.refused(w, r, v, verr, map[string]string{fieldUnderstood: fieldUnderstood},
			func() (page, error) { return p.sessionsForm(r, v) })
		return
	}
	ctx := r.Context()
	list, err := p.svc.Sessions.List(ctx, v.principal, string(v.user.ID))
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	ended := 0
	for _, s := range list {
		if s.Current {
			continue
		}
		err := p.svc.Sessions.Revoke(ctx, v.principal, string(v.user.ID), s.ID)
		if errors.Is(err, domain.ErrSessionNotFound) {
			continue // ended meanwhile
		}
		if err != nil {
			p.accountFail(w, r, v, err)
			return
		}
		ended++
	}
	if ended == 0 {
		seeOther(w, r, accountSessionsPath, "no-others")
		return
	}
	seeOther(w, r, accountSessionsPath, "others-ended")
}

// sessionRow is one session as the pages show it, the account's sessions
// page and the admin console's page of a user alike.
type sessionRow struct {
	ID, Device, IP, Created, LastUsed string
	// AMR is how the session signed in ("pwd, otp, mfa").
	AMR string
	// Current is the session of this browser.
	Current bool
}

func newSessionRow(s application.SessionView) sessionRow {
	row := sessionRow{ID: s.ID, Device: s.UserAgent, IP: s.IP, Created: consoleTime(s.CreatedAt),
		LastUsed: consoleTime(s.LastUsedAt), AMR: strings.Join(s.AMR, ", "), Current: s.Current}
	if row.Device == "" {
		row.Device = "Unknown device"
	}
	if row.IP == "" {
		row.IP = "Unknown"
	}
	return row
}
