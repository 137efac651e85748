package web

import (
	"errors"
	"net/http"

	"github.com/userd/userd/domain"
)

var adminClientNotices = map[string]string{"saved": "The changes are saved."}

// adminClientData is a client's page.
type adminClientData struct {
	Client           domain.OAuthClient
	Path             string
	Created, Updated string
	// Secret is a secret just made (at creation or a rotation), shown
	// this once.
	Secret string
	Form   clientFormData
}

func clientPage(v visitor, c domain.OAuthClient, secret string) page {
	pg := newPage(adminArea, &v, tmplAdminClient, c.Name)
	pg.Nav = adminClientsPath
	pg.Data = adminClientData{Client: c, Path: clientPath(c.ID), Created: consoleTime(c.CreatedAt),
		Updated: consoleTime(c.UpdatedAt), Secret: secret, Form: newClientForm(c, false)}
	return pg
}

// adminClient shows a client: its details, the edit form, the actions.
func (p *Pages) adminClient(w http.ResponseWriter, r *http.Request, v visitor) {
	c, err := p.svc.OAuthClients.Get(r.Context(), v.principal, r.PathValue("id"))
	if err != nil {
		p.clientFailed(w, r, v, err)
		return
	}
	pg := clientPage(v, c, "")
	pg.Notice = noticeOf(r, adminClientNotices)
	p.renderConsole(w, r, http.StatusOK, pg)
}

// adminUpdateClient saves the edit form, as PUT /api/oauth-clients/{id}
// does, every field present. A refusal shows the form again as typed.
func (p *Pages) adminUpdateClient(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx, id := r.Context(), r.PathValue("id")
	c, err := p.svc.OAuthClients.Update(ctx, v.principal, id, clientInput(r.PostForm, false))
	if err == nil {
		seeOther(w, r, clientPath(c.ID), "saved")
		return
	}
	status, messages := refusal(err)
	if status == 0 {
		p.clientFailed(w, r, v, err)
		return
	}
	stored, gerr := p.svc.OAuthClients.Get(ctx, v.principal, id)
	if gerr != nil {
		p.clientFailed(w, r, v, gerr)
		return
	}
	pg := clientPage(v, stored, "")
	d := pg.Data.(adminClientData)
	posted := postedClient(r.PostForm)
	posted.Type = stored.Type
	d.Form = newClientForm(posted, false)
	pg.Data = d
	p.renderConsole(w, r, status, withRefusal(pg, messages, clientFields))
}

// clientConfirm is an action on a client that cannot be undone.
type clientConfirm struct {
	title      func(name string) string
	paragraphs []string
	action     string
	button     string
	buttonID   string
}

var (
	confirmRotateSecret = clientConfirm{
		title: func(name string) string { return "Give " + name + " a new secret?" },
		paragraphs: []string{"The current secret stops working at once, on every node: the app cannot get tokens until its configuration has the new one.",
			"The new secret is shown once, on the next page."},
		action: "/secret", button: "Make a new secret", buttonID: "confirm-rotate-secret",
	}
	confirmDeleteClient = clientConfirm{
		title: func(name string) string { return "Delete " + name + "?" },
		paragraphs: []string{"The client is deleted, and every token and grant it was given ends at once: its users are signed out of it.",
			"This cannot be undone."},
		action: "/delete", button: "Delete the client", buttonID: "confirm-delete-client",
	}
)

// adminClientConfirm asks k about the client of the path, on the page of
// the console's other confirmations (admin_confirm.html).
func (p *Pages) adminClientConfirm(k clientConfirm) pageHandler {
	return func(w http.ResponseWriter, r *http.Request, v visitor) {
		c, err := p.svc.OAuthClients.Get(r.Context(), v.principal, r.PathValue("id"))
		if err != nil {
			p.clientFailed(w, r, v, err)
			return
		}
		pg := newPage(adminArea, &v, tmplAdminConfirm, k.title(c.Name))
		pg.Nav = adminClientsPath
		pg.Data = confirmData{Paragraphs: k.paragraphs, Action: clientPath(c.ID) + k.action, Button: k.button,
			ButtonID: k.buttonID, Cancel: clientPath(c.ID)}
		p.renderConsole(w, r, http.StatusOK, pg)
	}
}

// adminRotateSecret gives the client a new secret and shows it, this
// once, on the client's page (the answer to the POST, as at creation).
func (p *Pages) adminRotateSecret(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx, id := r.Context(), r.PathValue("id")
	secret, err := p.svc.OAuthClients.RotateSecret(ctx, v.principal, id)
	if errors.Is(err, domain.ErrPublicOAuthClient) {
		c, gerr := p.svc.OAuthClients.Get(ctx, v.principal, id)
		if gerr != nil {
			p.clientFailed(w, r, v, gerr)
			return
		}
		p.renderConsole(w, r, http.StatusConflict, clientPage(v, c, "").AddError("", "A public client has no secret."))
		return
	}
	if err != nil {
		p.clientFailed(w, r, v, err)
		return
	}
	c, err := p.svc.OAuthClients.Get(ctx, v.principal, id)
	if err != nil {
		p.clientFailed(w, r, v, err)
		return
	}
	pg := clientPage(v, c, secret)
	pg.Notice = "The client has a new secret: the old one no longer works."
	p.renderConsole(w, r, http.StatusOK, pg)
}

// adminDeleteClient deletes the client, as DELETE /api/oauth-clients/{id}
// does, and goes back to the list.
func (p *Pages) adminDeleteClient(w http.ResponseWriter, r *http.Request, v visitor) {
	if err := p.svc.OAuthClients.Delete(r.Context(), v.principal, r.PathValue("id")); err != nil {
		p.clientFailed(w, r, v, err)
		return
	}
	seeOther(w, r, adminClientsPath, "deleted")
}
