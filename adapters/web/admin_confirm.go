package web

import (
	"net/http"

	"github.com/userd/userd/domain"
)

// confirmKind is an action that cannot be undone, and so asks first: a
// GET page with the POST button, which works without a script.
type confirmKind struct {
	// title is the page's question about the account.
	title func(email string) string
	// paragraphs say what the action does; self is added on the admin's
	// own account.
	paragraphs []string
	self       string
	// action is the POST's path under the user's.
	action   string
	button   string
	buttonID string
}

var (
	confirmDelete = confirmKind{
		title: func(email string) string { return "Delete " + email + "?" },
		paragraphs: []string{"The account is deleted with its sessions, second factors and passkeys. This cannot be undone.",
			"Its events stay in the audit trail."},
		self:   "This is your own account: you will be signed out.",
		action: "/delete", button: "Delete the user", buttonID: "confirm-delete",
	}
	confirmResetMFA = confirmKind{
		title: func(email string) string { return "Reset the second factors of " + email + "?" },
		paragraphs: []string{"Its authenticator app (TOTP), recovery codes and passkeys are removed, and every session of the account ends.",
			"The user then signs in with their password alone, and can set up a second factor again."},
		self:   "This is your own account: you will be signed out.",
		action: "/reset-mfa", button: "Reset MFA", buttonID: "confirm-reset-mfa",
	}
	confirmRevokeAll = confirmKind{
		title:      func(email string) string { return "End every session of " + email + "?" },
		paragraphs: []string{"Every browser and app signed in to the account is signed out at its next request."},
		self:       "This is your own account: this session ends too, and you will be signed out.",
		action:     "/sessions/revoke-all", button: "Revoke all sessions", buttonID: "confirm-revoke-all",
	}
)

// confirmData is a confirm page.
type confirmData struct {
	Paragraphs []string
	Action     string
	Button     string
	ButtonID   string
	// Cancel goes back to the user's page.
	Cancel string
}

// adminConfirm shows the question of k about the user of the path.
func (p *Pages) adminConfirm(k confirmKind) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, v visitor) {
		u, err := p.svc.Users.Get(r.Context(), v.principal, r.PathValue("id"))
		if err != nil {
			p.adminFailed(w, r, &v, err)
			return
		}
		pg := newPage(adminArea, &v, tmplAdminConfirm, k.title(string(u.Email)))
		pg.Nav = adminUsersPath
		d := confirmData{Paragraphs: k.paragraphs, Action: userPath(u.ID) + k.action, Button: k.button,
			ButtonID: k.buttonID, Cancel: userPath(u.ID)}
		if u.ID == v.user.ID {
			d.Paragraphs = append(d.Paragraphs[:len(d.Paragraphs):len(d.Paragraphs)], k.self)
		}
		pg.Data = d
		p.renderConsole(w, r, http.StatusOK, pg)
	}
}

// adminDelete deletes the user, as DELETE /api/users/{id} does, and goes
// back to the list.
func (p *Pages) adminDelete(w http.ResponseWriter, r *http.Request, v visitor) {
	id := domain.UserID(r.PathValue("id"))
	err := p.svc.Users.Delete(r.Context(), v.principal, string(id))
	if err != nil {
		p.userActionRefused(w, r, v, err)
		return
	}
	if id == v.user.ID {
		p.actedOnSelf(w, r, v, adminUsersPath, "deleted")
		return
	}
	seeOther(w, r, adminUsersPath, "deleted")
}

// adminResetMFA removes every second factor of the user, as POST
// /api/users/{id}/mfa/reset does; its sessions end.
func (p *Pages) adminResetMFA(w http.ResponseWriter, r *http.Request, v visitor) {
	p.userAction(w, r, v, "mfa-reset", func() error {
		return p.svc.MFA.Reset(r.Context(), v.principal, r.PathValue("id"))
	})
}

// adminRevoke ends one session of the user, as DELETE
// /api/users/{id}/sessions/{sid} does. The admin's own ends their
// console session: they land on the sign-in page.
func (p *Pages) adminRevoke(w http.ResponseWriter, r *http.Request, v visitor) {
	p.userAction(w, r, v, "session-revoked", func() error {
		return p.svc.Sessions.Revoke(r.Context(), v.principal, r.PathValue("id"), r.PathValue("sid"))
	})
}

// adminRevokeAll ends every session of the user, as DELETE
// /api/users/{id}/sessions does.
func (p *Pages) adminRevokeAll(w http.ResponseWriter, r *http.Request, v visitor) {
	p.userAction(w, r, v, "sessions-revoked", func() error {
		return p.svc.Sessions.RevokeAll(r.Context(), v.principal, r.PathValue("id"))
	})
}
