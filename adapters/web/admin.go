package web

import "net/http"

// routeAdmin routes the admin console's pages. Every one is behind guard:
// admins only, state changes by POST from userd's own pages only.
func (p *Pages) routeAdmin() {
	a := adminArea
	p.mux.HandleFunc("GET "+a.Prefix+"{$}", p.guard(a, func(w http.ResponseWriter, r *http.Request, _ visitor) {
		http.Redirect(w, r, a.Prefix+"users", http.StatusSeeOther)
	}))
	p.mux.HandleFunc("GET "+a.Prefix+"users", p.guard(a, p.adminUsers))
}

// adminUsers lists the users.
func (p *Pages) adminUsers(w http.ResponseWriter, r *http.Request, v visitor) {
	pg := newPage(adminArea, &v, tmplNotice, "Users")
	pg.Nav = adminArea.Prefix + "users"
	pg.Data = noticeData{}
	p.renderConsole(w, r, http.StatusOK, pg)
}
