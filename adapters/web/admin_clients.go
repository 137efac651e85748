package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/userd/userd/domain"
)

// The console's pages of the OpenID provider's clients.
const (
	adminClientsPath = AdminPrefix + "clients"
	tmplAdminClients = "admin_clients.html"
	tmplAdminClient  = "admin_client.html"
)

// routeAdminClients routes the clients' pages: the list with the create
// form, and a client's page with its edit form and actions. Each calls
// the OAuthClientService as the API's /api/oauth-clients does.
func (p *Pages) routeAdminClients(route func(pattern string, h pageHandler)) {
	route("GET "+adminClientsPath, p.adminClients)
	route("POST "+adminClientsPath, p.adminCreateClient)
	client := adminClientsPath + "/{id}"
	route("GET "+client, p.adminClient)
	route("POST "+client, p.adminUpdateClient)
	route("GET "+client+"/secret", p.adminClientConfirm(confirmRotateSecret))
	route("POST "+client+"/secret", p.adminRotateSecret)
	route("GET "+client+"/delete", p.adminClientConfirm(confirmDeleteClient))
	route("POST "+client+"/delete", p.adminDeleteClient)
}

// clientPath is the page of the client id.
func clientPath(id domain.OAuthClientID) string {
	return adminClientsPath + "/" + url.PathEscape(string(id))
}

var adminClientsNotices = map[string]string{"deleted": "The client is deleted: its tokens and grants ended with it."}

// adminClientsData is the list and the create form.
type adminClientsData struct {
	Clients []clientRow
	// Next and First link the pages of the list, as the users'.
	Next, First string
	Form        clientFormData
}

// clientRow is one line of the list.
type clientRow struct {
	Path, Name, ID, Type, Grants, FirstParty, Created string
	RedirectURIs                                      []string
}

// adminClients lists the clients by id, 50 a page, above the create
// form.
func (p *Pages) adminClients(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.clientsPage(r, v, newClientForm(defaultClient(), true))
	if err != nil {
		if pg, ok := listFailed(pg, err); ok {
			p.renderConsole(w, r, http.StatusBadRequest, pg)
			return
		}
		p.adminFailed(w, r, &v, err)
		return
	}
	pg.Notice = noticeOf(r, adminClientsNotices)
	p.renderConsole(w, r, http.StatusOK, pg)
}

// clientsPage builds the list's page with the create form f.
func (p *Pages) clientsPage(r *http.Request, v visitor, f clientFormData) (page, error) {
	pg := newPage(adminArea, &v, tmplAdminClients, "Clients")
	pg.Nav = adminClientsPath
	after := r.URL.Query().Get(fieldAfter)
	d := adminClientsData{Form: f}
	if after != "" {
		d.First = adminClientsPath
	}
	pg.Data = d
	list, err := p.svc.OAuthClients.List(r.Context(), v.principal, "", after)
	if err != nil {
		return pg, err
	}
	for _, c := range list.Items {
		grants := make([]string, len(c.GrantTypes))
		for i, g := range c.GrantTypes {
			grants[i] = string(g)
		}
		d.Clients = append(d.Clients, clientRow{Path: clientPath(c.ID), Name: c.Name, ID: string(c.ID), Type: string(c.Type),
			Grants: strings.Join(grants, ", "), FirstParty: yesNo(c.FirstParty), Created: consoleTime(c.CreatedAt),
			RedirectURIs: c.RedirectURIs})
	}
	if list.Next != "" {
		d.Next = listPath(adminClientsPath, fieldAfter, string(list.Next))
	}
	pg.Data = d
	return pg, nil
}

// adminCreateClient registers the form's client and shows its page with
// the secret, this once: it is not stored, so the answer to the POST
// itself shows it rather than a redirect to a page that could not.
func (p *Pages) adminCreateClient(w http.ResponseWriter, r *http.Request, v visitor) {
	created, err := p.svc.OAuthClients.Create(r.Context(), v.principal, clientInput(r.PostForm, true))
	if err != nil {
		status, messages := refusal(err)
		if status == 0 {
			p.clientFailed(w, r, v, err)
			return
		}
		pg, perr := p.clientsPage(r, v, newClientForm(postedClient(r.PostForm), true))
		if perr != nil {
			p.adminFailed(w, r, &v, perr)
			return
		}
		p.renderConsole(w, r, status, withRefusal(pg, messages, clientFields))
		return
	}
	pg := clientPage(v, created.Client, created.Secret)
	pg.Notice = "The client is registered."
	p.renderConsole(w, r, http.StatusOK, pg)
}

// clientFailed answers an error about a client that no form explains.
func (p *Pages) clientFailed(w http.ResponseWriter, r *http.Request, v visitor, err error) {
	switch {
	case errors.Is(err, domain.ErrInvalidOAuthClientID):
		p.clientNotFound(w, r, v, http.StatusBadRequest)
	case errors.Is(err, domain.ErrOAuthClientNotFound):
		p.clientNotFound(w, r, v, http.StatusNotFound)
	default:
		p.adminFailed(w, r, &v, err)
	}
}

func (p *Pages) clientNotFound(w http.ResponseWriter, r *http.Request, v visitor, status int) {
	pg := newPage(adminArea, &v, tmplNotice, "Client not found")
	pg.Nav = adminClientsPath
	pg.Data = noticeData{Paragraphs: []string{"No client has this address: it may have been deleted, or the link is wrong."},
		Link: navLink{adminClientsPath, "Back to the clients"}}
	p.renderConsole(w, r, status, pg)
}
