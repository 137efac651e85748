package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// The console's pages of the identity providers people sign in with
// (contract-identity.md, section 2), which the menu calls "Sign-in
// providers".
const (
	adminIdpsPath = AdminPrefix + "identity-providers"
	tmplAdminIdps = "admin_identity_providers.html"
	tmplAdminIdp  = "admin_identity_provider.html"
)

// routeAdminIdps routes the providers' pages: the list with the
// create form, and a provider's page with its edit form and its delete.
// Each calls the IdentityProviderService as the API's
// /api/identity-providers does.
func (p *Pages) routeAdminIdps(route func(pattern string, h pageHandler)) {
	route("GET "+adminIdpsPath, p.adminIdps)
	route("POST "+adminIdpsPath, p.adminCreateIdp)
	provider := adminIdpsPath + "/{slug}"
	route("GET "+provider, p.adminIdp)
	route("POST "+provider, p.adminUpdateIdp)
	route("GET "+provider+"/delete", p.adminConfirmDeleteIdp)
	route("POST "+provider+"/delete", p.adminDeleteIdp)
}

// adminIdpPath is the console's page of the provider slug.
func adminIdpPath(slug string) string { return adminIdpsPath + "/" + url.PathEscape(slug) }

// adminIdpCallbackURL is where the provider slug sends the browser back:
// the URL to register at the provider, under USERD_PUBLIC_URL.
func (p *Pages) adminIdpCallbackURL(slug string) string { return p.svc.Federation.CallbackURL(slug) }

var adminIdpsNotices = map[string]string{
	"deleted": "The provider is deleted: its button is gone from the sign-in page, and the identities linked through it with it.",
}

// adminIdpsData is the list and the create form.
type adminIdpsData struct {
	Providers []adminIdpRow
	Form      adminIdpForm
	// CallbackExample is the callback URL of a slug "<slug>", for the
	// create form's hint.
	CallbackExample string
}

// adminIdpRow is one line of the list.
type adminIdpRow struct {
	Path, DisplayName, Slug, Kind, Enabled, CallbackURL string
}

// adminIdps lists the providers by slug above the create form.
func (p *Pages) adminIdps(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.adminIdpsPage(r, v, newAdminIdpForm(defaultAdminIdp(), true))
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	pg.Notice = noticeOf(r, adminIdpsNotices)
	p.renderConsole(w, r, http.StatusOK, pg)
}

// adminIdpsPage builds the list's page with the create form f.
func (p *Pages) adminIdpsPage(r *http.Request, v visitor, f adminIdpForm) (page, error) {
	list, err := p.svc.IdentityProviders.IdentityProviders(r.Context(), v.principal)
	if err != nil {
		return page{}, err
	}
	pg := newPage(adminArea, &v, tmplAdminIdps, "Sign-in providers")
	pg.Nav = adminIdpsPath
	d := adminIdpsData{Form: f, CallbackExample: p.adminIdpCallbackURL("<slug>")}
	for _, ip := range list {
		d.Providers = append(d.Providers, adminIdpRow{Path: adminIdpPath(ip.Slug), DisplayName: ip.DisplayName, Slug: ip.Slug,
			Kind: idpKindLabel(ip.Kind), Enabled: yesNo(ip.Enabled), CallbackURL: p.adminIdpCallbackURL(ip.Slug)})
	}
	pg.Data = d
	return pg, nil
}

// adminCreateIdp registers the form's provider and goes to its page,
// which shows the callback URL to register at the provider. A refusal
// shows the form again as typed, the secret aside.
func (p *Pages) adminCreateIdp(w http.ResponseWriter, r *http.Request, v visitor) {
	created, err := p.svc.IdentityProviders.CreateIdentityProvider(r.Context(), v.principal, adminIdpInput(r.PostForm, "", true))
	if err == nil {
		seeOther(w, r, adminIdpPath(created.Slug), "created")
		return
	}
	status, messages := adminIdpRefusal(err)
	if status == 0 {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	pg, perr := p.adminIdpsPage(r, v, newAdminIdpForm(postedAdminIdp(r.PostForm, ""), true))
	if perr != nil {
		p.adminFailed(w, r, &v, perr)
		return
	}
	p.renderConsole(w, r, status, withRefusal(pg, messages, adminIdpFields))
}

var adminIdpNotices = map[string]string{
	"created": "The provider is registered. Register its callback URL at the provider, if it is not yet.",
	"saved":   "The changes are saved.",
}

// adminIdpData is a provider's page.
type adminIdpData struct {
	Provider         domain.IdentityProvider
	Path             string
	Kind             string
	CallbackURL      string
	Created, Updated string
	Form             adminIdpForm
}

func (p *Pages) adminIdpPage(v visitor, ip domain.IdentityProvider) page {
	pg := newPage(adminArea, &v, tmplAdminIdp, ip.DisplayName)
	pg.Nav = adminIdpsPath
	pg.Data = adminIdpData{Provider: ip, Path: adminIdpPath(ip.Slug), Kind: idpKindLabel(ip.Kind),
		CallbackURL: p.adminIdpCallbackURL(ip.Slug), Created: consoleTime(ip.CreatedAt), Updated: consoleTime(ip.UpdatedAt),
		Form: newAdminIdpForm(ip, false)}
	return pg
}

// adminIdp shows a provider: its details, the edit form, the delete.
func (p *Pages) adminIdp(w http.ResponseWriter, r *http.Request, v visitor) {
	ip, err := p.svc.IdentityProviders.IdentityProvider(r.Context(), v.principal, r.PathValue("slug"))
	if err != nil {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	pg := p.adminIdpPage(v, ip)
	pg.Notice = noticeOf(r, adminIdpNotices)
	p.renderConsole(w, r, http.StatusOK, pg)
}

// adminUpdateIdp saves the edit form, as PUT
// /api/identity-providers/{slug} does: every field of the provider's
// kind present, the secret only when one is typed (blank keeps it). A
// refusal shows the form again as typed, the secret aside.
func (p *Pages) adminUpdateIdp(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx, slug := r.Context(), r.PathValue("slug")
	stored, err := p.svc.IdentityProviders.IdentityProvider(ctx, v.principal, slug)
	if err != nil {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	_, err = p.svc.IdentityProviders.UpdateIdentityProvider(ctx, v.principal, slug, adminIdpInput(r.PostForm, stored.Kind, false))
	if err == nil {
		seeOther(w, r, adminIdpPath(slug), "saved")
		return
	}
	status, messages := adminIdpRefusal(err)
	if status == 0 {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	pg := p.adminIdpPage(v, stored)
	d := pg.Data.(adminIdpData)
	posted := postedAdminIdp(r.PostForm, stored.Kind)
	posted.Slug = stored.Slug
	d.Form = newAdminIdpForm(posted, false)
	pg.Data = d
	p.renderConsole(w, r, status, withRefusal(pg, messages, adminIdpFields))
}

// adminConfirmDeleteIdp asks before the provider of the path is
// deleted, on the page of the console's other confirmations.
func (p *Pages) adminConfirmDeleteIdp(w http.ResponseWriter, r *http.Request, v visitor) {
	ip, err := p.svc.IdentityProviders.IdentityProvider(r.Context(), v.principal, r.PathValue("slug"))
	if err != nil {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	pg := newPage(adminArea, &v, tmplAdminConfirm, "Delete "+ip.DisplayName+"?")
	pg.Nav = adminIdpsPath
	pg.Data = confirmData{Paragraphs: []string{
		"Its button leaves the sign-in page, and every identity linked through it is unlinked: people who signed in with it alone sign in another way (a password reset) from now on.",
		"This cannot be undone."},
		Action: adminIdpPath(ip.Slug) + "/delete", Button: "Delete the provider", ButtonID: "confirm-delete-provider",
		Cancel: adminIdpPath(ip.Slug)}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// adminDeleteIdp deletes the provider, as DELETE
// /api/identity-providers/{slug} does, and goes back to the list.
func (p *Pages) adminDeleteIdp(w http.ResponseWriter, r *http.Request, v visitor) {
	if err := p.svc.IdentityProviders.DeleteIdentityProvider(r.Context(), v.principal, r.PathValue("slug")); err != nil {
		p.adminIdpFailed(w, r, v, err)
		return
	}
	seeOther(w, r, adminIdpsPath, "deleted")
}

// adminIdpRefusal is refusal, with a slug taken said at its field.
func adminIdpRefusal(err error) (int, []refusalMessage) {
	if errors.Is(err, domain.ErrIdentityProviderSlugTaken) {
		err = fieldRefusal(http.StatusConflict, domain.FieldProviderSlug, "Another provider has this slug.")
	}
	status, messages := refusal(err)
	for i, m := range messages {
		if name, ok := adminIdpFieldNames[m.Field]; ok && !m.sentence {
			messages[i] = refusalMessage{Field: m.Field, Message: name + " " + m.Message + ".", sentence: true}
		}
	}
	return status, messages
}

// adminIdpFailed answers an error about a provider that no form explains.
func (p *Pages) adminIdpFailed(w http.ResponseWriter, r *http.Request, v visitor, err error) {
	if errors.Is(err, domain.ErrIdentityProviderNotFound) {
		pg := newPage(adminArea, &v, tmplNotice, "Sign-in provider not found")
		pg.Nav = adminIdpsPath
		pg.Data = noticeData{Paragraphs: []string{"No sign-in provider has this address: it may have been deleted, or the link is wrong."},
			Link: navLink{adminIdpsPath, "Back to the sign-in providers"}}
		p.renderConsole(w, r, http.StatusNotFound, pg)
		return
	}
	p.adminFailed(w, r, &v, err)
}
