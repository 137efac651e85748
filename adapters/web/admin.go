package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The templates of the admin console.
const (
	tmplAdminUsers   = "admin_users.html"
	tmplAdminUser    = "admin_user.html"
	tmplAdminConfirm = "admin_confirm.html"
	tmplAdminAudit   = "admin_audit.html"
	tmplAdminKeys    = "admin_keys.html"
)

// The console's own pages, under AdminPrefix.
const (
	adminUsersPath = AdminPrefix + "users"
	adminAuditPath = AdminPrefix + "audit"
	adminKeysPath  = AdminPrefix + "keys"
)

// routeAdmin routes the admin console's pages. Every one is behind guard:
// admins only, state changes by POST from userd's own pages only. Each
// action calls the use case the API calls, which checks the admin's right
// again and records the action with the admin as actor.
func (p *Pages) routeAdmin() {
	a := adminArea
	route := func(pattern string, h pageHandler) { p.mux.HandleFunc(pattern, p.guard(a, h)) }
	route("GET "+a.Prefix+"{$}", func(w http.ResponseWriter, r *http.Request, _ visitor) {
		http.Redirect(w, r, adminUsersPath, http.StatusSeeOther)
	})
	route("GET "+adminUsersPath, p.adminUsers)
	user := adminUsersPath + "/{id}"
	route("GET "+user, p.adminUser)
	p.mux.HandleFunc("POST "+user, p.guardUpTo(a, maxUserFormBytes, p.adminUpdateUser))
	route("POST "+user+"/disable", p.adminSetDisabled(true))
	route("POST "+user+"/enable", p.adminSetDisabled(false))
	route("POST "+user+"/verify-email", p.adminVerifyEmail)
	route("POST "+user+"/password-reset", p.adminSendReset)
	route("POST "+user+"/unlock", p.adminUnlock)
	route("GET "+user+"/reset-mfa", p.adminConfirm(confirmResetMFA))
	route("POST "+user+"/reset-mfa", p.adminResetMFA)
	route("GET "+user+"/delete", p.adminConfirm(confirmDelete))
	route("POST "+user+"/delete", p.adminDelete)
	route("GET "+user+"/sessions/revoke-all", p.adminConfirm(confirmRevokeAll))
	route("POST "+user+"/sessions/revoke-all", p.adminRevokeAll)
	route("POST "+user+"/sessions/{sid}/revoke", p.adminRevoke)
	route("GET "+adminAuditPath, p.adminAudit)
	route("GET "+adminKeysPath, p.adminKeys)
	route("POST "+adminKeysPath+"/rotate", p.adminRotate)
	p.routeAdminClients(route)
	p.routeAdminIdps(route)
	p.routeAdminIdentities(route)
	p.routeAdminTokens(route)
}

// userPath is the page of the user id.
func userPath(id domain.UserID) string { return adminUsersPath + "/" + url.PathEscape(string(id)) }

// adminNotFound answers a user (or a session of one) that does not exist,
// or an address that cannot name one. A malformed id is 400, as the API
// answers it (invalid_id); an unknown one 404. The page is the same: the
// admin followed a stale link or mistyped one.
func (p *Pages) adminNotFound(w http.ResponseWriter, r *http.Request, v *visitor, status int, title, what string) {
	pg := newPage(adminArea, v, tmplNotice, title)
	pg.Nav = adminUsersPath
	pg.Data = noticeData{Paragraphs: []string{"No " + what + " has this address: it may have ended or been deleted, or the link is wrong."},
		Link: navLink{adminUsersPath, "Back to the users"}}
	p.renderConsole(w, r, status, pg)
}

// adminFailed answers an error of a use case that no form of the page
// explains: the user or session is unknown (404) or its id malformed
// (400); the admin's own session lost its power meanwhile (disabled,
// demoted, deleted by another admin: to the sign-in page); anything else
// is unexpected.
func (p *Pages) adminFailed(w http.ResponseWriter, r *http.Request, v *visitor, err error) {
	switch {
	case errors.Is(err, domain.ErrInvalidID):
		p.adminNotFound(w, r, v, http.StatusBadRequest, "User not found", "user")
	case errors.Is(err, domain.ErrUserNotFound):
		p.adminNotFound(w, r, v, http.StatusNotFound, "User not found", "user")
	case errors.Is(err, domain.ErrInvalidSessionID):
		p.adminNotFound(w, r, v, http.StatusBadRequest, "Session not found", "session")
	case errors.Is(err, domain.ErrSessionNotFound):
		p.adminNotFound(w, r, v, http.StatusNotFound, "Session not found", "session")
	case errors.Is(err, domain.ErrInvalidToken), errors.Is(err, domain.ErrUnauthenticated):
		p.sessionEnded(w, r)
	case errors.Is(err, domain.ErrForbidden):
		p.renderConsole(w, r, http.StatusForbidden, notAdminPage(adminArea, v))
	default:
		p.consoleFail(w, r, adminArea, v, err)
	}
}

// actedOnSelf finishes an action the admin took on their own account:
// one that ended their own session (a revoke, a change of email or
// profiles, a reset of their second factors, their own deletion) leaves
// them on the sign-in page, with the cookie gone, rather than on a page
// whose next request would find no session. Whether the session lives is
// asked of the use cases, which know every rule that ends one.
func (p *Pages) actedOnSelf(w http.ResponseWriter, r *http.Request, v visitor, path, done string) {
	if !p.ownSessionLives(r.Context(), v) {
		p.sessionEnded(w, r)
		return
	}
	seeOther(w, r, path, done)
}

// ownSessionLives reports whether the visitor's session is still among
// the account's active ones. A store that fails says nothing: the next
// request finds out.
func (p *Pages) ownSessionLives(ctx context.Context, v visitor) bool {
	sid := v.principal.Session.ID
	list, err := p.svc.Sessions.List(ctx, v.principal, string(v.user.ID))
	if err != nil {
		return transient(err)
	}
	return sid == "" || slices.ContainsFunc(list, func(s application.SessionView) bool { return s.ID == sid })
}

// sessionEnded sends an admin whose console session has just ended to
// the sign-in page, which says so.
func (p *Pages) sessionEnded(w http.ResponseWriter, r *http.Request) {
	signedOutTo(w, r, adminArea, "session-ended")
}

// consoleTime shows a time in UTC, to the minute.
func consoleTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// yesNo shows a flag of an account.
func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}
