package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// accountAppsPath lists the apps the visitor gave access to through the
// OpenID provider's consent page.
const accountAppsPath = AccountPrefix + "apps"

const tmplAccountApps = "account_apps.html"

// routeAccountApps routes the apps page and its revoke buttons.
func (p *Pages) routeAccountApps() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountAppsPath, p.guard(a, p.appsPage))
	p.mux.HandleFunc("POST "+accountAppsPath+"/{clientId}/revoke", p.guard(a, p.revokeApp))
}

// appRow is one app with access, as the page shows it.
type appRow struct {
	ClientID, Name, Granted string
	// Sees are what its scopes reveal, in words (scopeWords).
	Sees []string
}

// appsPage lists the apps with access, newest grant first as the
// provider gives them. With the provider off, no app can have any.
func (p *Pages) appsPage(w http.ResponseWriter, r *http.Request, v visitor) {
	var rows []appRow
	if p.provider != nil {
		grants, err := p.provider.Grants(r.Context(), v.principal)
		if err != nil {
			p.accountFail(w, r, v, err)
			return
		}
		rows = make([]appRow, len(grants))
		for i, g := range grants {
			rows[i] = appRow{ClientID: string(g.ClientID), Name: g.ClientName, Granted: consoleTime(g.GrantedAt),
				Sees: scopeTexts(g.Scopes)}
		}
	}
	pg := accountPage(r, &v, tmplAccountApps, "Apps with access", accountAppsPath)
	pg.Data = rows
	p.renderConsole(w, r, http.StatusOK, pg)
}

// revokeApp takes an app's access away: the provider removes the grant
// and ends the sessions it gave the app (its refresh tokens stop at
// once). An app without a grant (revoked meanwhile, or never) says so.
func (p *Pages) revokeApp(w http.ResponseWriter, r *http.Request, v visitor) {
	if p.provider == nil {
		seeOther(w, r, accountAppsPath, "app-gone")
		return
	}
	err := p.provider.RevokeGrant(r.Context(), v.principal, r.PathValue("clientId"))
	switch {
	case errors.Is(err, domain.ErrGrantNotFound), errors.Is(err, domain.ErrInvalidOAuthClientID),
		errors.Is(err, domain.ErrOAuthClientNotFound):
		seeOther(w, r, accountAppsPath, "app-gone")
	case err != nil:
		p.accountFail(w, r, v, err)
	default:
		seeOther(w, r, accountAppsPath, "app-revoked")
	}
}

// appRevokePath is the revoke button's action for the client id.
func appRevokePath(id string) string { return accountAppsPath + "/" + url.PathEscape(id) + "/revoke" }

// RevokePath is the row's revoke action, for the template.
func (a appRow) RevokePath() string { return appRevokePath(a.ClientID) }
