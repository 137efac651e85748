package web

import "net/http"

// limitedAccountPosts are the account page's actions that check a
// password or a code: they fall under the per-IP allowance of /auth
// (LimitedByIP).
var limitedAccountPosts = map[string]bool{}

// routeAccount routes the account page and its actions. Every one is
// behind guard: signed in, state changes by POST from userd's own pages
// only.
func (p *Pages) routeAccount() {
	a := accountArea
	p.mux.HandleFunc("GET "+a.Prefix+"{$}", p.guard(a, p.accountHome))
}

// accountHome is the signed-in person's own page.
func (p *Pages) accountHome(w http.ResponseWriter, r *http.Request, v visitor) {
	pg := newPage(accountArea, &v, tmplNotice, "My account")
	pg.Nav = accountArea.Prefix
	pg.Data = noticeData{Paragraphs: []string{"Signed in as " + string(v.user.Email) + "."}}
	p.renderConsole(w, r, http.StatusOK, pg)
}
