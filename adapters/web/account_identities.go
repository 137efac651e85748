package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// accountIdentitiesPath lists the visitor's identities at other providers
// (contract-identity.md, section 2), which the menu calls "Linked
// accounts", with a button to unlink each and one to link each enabled
// provider not linked yet.
const accountIdentitiesPath = AccountPrefix + "identities"

const tmplAccountIdentities = "account_identities.html"

// identityLinkedDone is the done of the notice that an identity is
// linked: the flows that link one (the "Link" buttons' and a sign-in that
// links the identity waiting for it) end on the page with it, and with
// the provider's slug, on identityLinkedPath.
const identityLinkedDone = "identity-linked"

// identityLinkedPath is the page that says the visitor's account at the
// provider slug is linked, in the provider's name.
func identityLinkedPath(slug string) string {
	return accountIdentitiesPath + "?" + url.Values{"done": {identityLinkedDone}, "provider": {slug}}.Encode()
}

// routeAccountIdentities routes the page and its unlink buttons. The link
// buttons' POST, which starts a flow at the provider, is the federation
// flow's.
func (p *Pages) routeAccountIdentities() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountIdentitiesPath, p.guard(a, p.identitiesPage))
	p.mux.HandleFunc("POST "+accountIdentitiesPath+"/{slug}/unlink", p.guard(a, p.unlinkOwnIdentity))
}

// accountIdentityNotices are what the page says after an action's
// redirect; identityLinkedDone's names the provider (identitiesNotice).
var accountIdentityNotices = map[string]string{
	"unlinked":      "The account is unlinked: it no longer signs you in.",
	"unlinked-gone": "That account was not linked any more.",
}

// lastSignInMethodMessage is the refusal of an unlink that would leave the
// visitor no way to sign in.
const lastSignInMethodMessage = "This is the only way to sign in to your account: set a password or add a passkey first."

// identityRow is one identity at a provider, as the pages show it.
type identityRow struct {
	Slug, Provider, Email, Linked, LastUsed string
	// Action is the path of its unlink: the POST on the account page, the
	// confirm page in the console.
	Action string
}

// newIdentityRows are the identities ids as the pages show them, each
// provider by its display name in names (its slug when it has none: a
// provider disabled or deleted meanwhile); action makes each one's unlink
// path.
func newIdentityRows(ids []domain.UserIdentity, names map[string]string, action func(slug string) string) []identityRow {
	rows := make([]identityRow, len(ids))
	for i, id := range ids {
		name, ok := names[id.Provider]
		if !ok {
			name = id.Provider
		}
		email := string(id.Email)
		if email == "" {
			email = "—"
		}
		rows[i] = identityRow{Slug: id.Provider, Provider: name, Email: email, Linked: consoleTime(id.LinkedAt),
			LastUsed: consoleTime(id.LastUsedAt), Action: action(id.Provider)}
	}
	return rows
}

// accountIdentitiesData is the page.
type accountIdentitiesData struct {
	Identities []identityRow
	// Offers are the enabled providers not linked yet, each a "Link"
	// button.
	Offers []linkOffer
}

// linkOffer is the "Link" button of an enabled provider.
type linkOffer struct {
	Slug, DisplayName, Action string
}

// identitiesPage lists the visitor's identities and the providers they
// may link.
func (p *Pages) identitiesPage(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.accountIdentitiesPage(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// accountIdentitiesPage builds the page, with the notice of the action
// that led to it.
func (p *Pages) accountIdentitiesPage(r *http.Request, v visitor) (page, error) {
	ctx := r.Context()
	ids, err := p.svc.Federation.Identities(ctx, v.principal, string(v.user.ID))
	if err != nil {
		return page{}, err
	}
	providers, err := p.svc.Federation.SignInProviders(ctx)
	if err != nil {
		return page{}, err
	}
	names := make(map[string]string, len(providers))
	for _, sp := range providers {
		names[sp.Slug] = sp.DisplayName
	}
	d := accountIdentitiesData{Identities: newIdentityRows(ids, names, func(slug string) string {
		return accountIdentitiesPath + "/" + url.PathEscape(slug) + "/unlink"
	})}
	linked := make(map[string]bool, len(ids))
	for _, id := range ids {
		linked[id.Provider] = true
	}
	for _, sp := range providers {
		if !linked[sp.Slug] {
			d.Offers = append(d.Offers, linkOffer{Slug: sp.Slug, DisplayName: sp.DisplayName,
				Action: accountIdentitiesPath + "/" + url.PathEscape(sp.Slug) + "/link"})
		}
	}
	pg := accountPage(r, &v, tmplAccountIdentities, "Linked accounts", accountIdentitiesPath)
	pg.Notice = identitiesNotice(r, names)
	pg.Data = d
	return pg, nil
}

// identitiesNotice is the page's notice: one of its fixed messages, or
// that the account at the provider of the query is linked, in the name
// the provider has here (never text from the query; without a provider
// it knows, in general words).
func identitiesNotice(r *http.Request, names map[string]string) string {
	q := r.URL.Query()
	if q.Get("done") != identityLinkedDone {
		return noticeOf(r, accountIdentityNotices)
	}
	if name, ok := names[q.Get("provider")]; ok {
		return "Your " + name + " account is linked."
	}
	return "Your account at the provider is linked."
}

// unlinkOwnIdentity removes the visitor's identity at the provider of the
// path, as DELETE /api/users/me/identities/{provider} does. The last way
// to sign in is refused on the page, with what to do first.
func (p *Pages) unlinkOwnIdentity(w http.ResponseWriter, r *http.Request, v visitor) {
	err := p.svc.Federation.UnlinkIdentity(r.Context(), v.principal, string(v.user.ID), r.PathValue("slug"))
	switch {
	case err == nil:
		seeOther(w, r, accountIdentitiesPath, "unlinked")
	case errors.Is(err, domain.ErrIdentityNotFound):
		seeOther(w, r, accountIdentitiesPath, "unlinked-gone")
	case errors.Is(err, domain.ErrLastSignInMethod):
		p.refused(w, r, v, formError(http.StatusConflict, lastSignInMethodMessage), nil, func() (page, error) {
			return p.accountIdentitiesPage(r, v)
		})
	default:
		p.accountFail(w, r, v, err)
	}
}
