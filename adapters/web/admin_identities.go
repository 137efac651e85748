package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// routeAdminIdentities routes the unlink of a user's identity at another
// provider, from the user's page: asked first, as the console's other
// actions that cannot be undone.
func (p *Pages) routeAdminIdentities(route func(pattern string, h pageHandler)) {
	unlink := adminUsersPath + "/{id}/identities/{slug}/unlink"
	route("GET "+unlink, p.adminConfirmUnlink)
	route("POST "+unlink, p.adminUnlink)
}

// adminUnlinkPath is the unlink (its confirm page, and the POST) of the
// user id's identity at the provider slug.
func adminUnlinkPath(id domain.UserID, slug string) string {
	return userPath(id) + "/identities/" + url.PathEscape(slug) + "/unlink"
}

// adminLastSignInMethod is the refusal of an unlink that would leave the
// account no way to sign in.
const adminLastSignInMethod = "This is the account's only way to sign in: it has no password, passkey or other linked account. " +
	"Unlinking it would lock its owner out: they can set a password first, through a password reset."

// userIdentityRows are the identities of the user u, for the user's page,
// each provider by its display name.
func (p *Pages) userIdentityRows(ctx context.Context, v visitor, u domain.User) ([]identityRow, error) {
	ids, err := p.svc.Federation.Identities(ctx, v.principal, string(u.ID))
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	providers, err := p.svc.IdentityProviders.IdentityProviders(ctx, v.principal)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(providers))
	for _, ip := range providers {
		names[ip.Slug] = ip.DisplayName
	}
	return newIdentityRows(ids, names, func(slug string) string { return adminUnlinkPath(u.ID, slug) }), nil
}

// adminConfirmUnlink asks before the user's identity at the provider of
// the path is unlinked.
func (p *Pages) adminConfirmUnlink(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx := r.Context()
	u, err := p.svc.Users.Get(ctx, v.principal, r.PathValue("id"))
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	rows, err := p.userIdentityRows(ctx, v, u)
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	slug := r.PathValue("slug")
	for _, row := range rows {
		if row.Slug != slug {
			continue
		}
		pg := newPage(adminArea, &v, tmplAdminConfirm, "Unlink "+row.Provider+" from "+string(u.Email)+"?")
		pg.Nav = adminUsersPath
		pg.Data = confirmData{Paragraphs: []string{
			"The account's identity at " + row.Provider + " (" + row.Email + ") no longer signs it in. Its sessions go on.",
			"Its owner can link it again from their account page."},
			Action: row.Action, Button: "Unlink " + row.Provider, ButtonID: "confirm-unlink", Cancel: userPath(u.ID)}
		p.renderConsole(w, r, http.StatusOK, pg)
		return
	}
	p.adminNotFound(w, r, &v, http.StatusNotFound, "Linked account not found", "linked account")
}

// adminUnlink unlinks the user's identity at the provider of the path, as
// DELETE /api/users/{id}/identities/{provider} does, and goes back to the
// user's page; the account's last way to sign in is refused there.
func (p *Pages) adminUnlink(w http.ResponseWriter, r *http.Request, v visitor) {
	err := p.svc.Federation.UnlinkIdentity(r.Context(), v.principal, r.PathValue("id"), r.PathValue("slug"))
	switch {
	case err == nil:
		p.afterUserAction(w, r, v, "identity-unlinked")
	case errors.Is(err, domain.ErrIdentityNotFound):
		p.afterUserAction(w, r, v, "identity-gone")
	case errors.Is(err, domain.ErrLastSignInMethod):
		p.userActionRefused(w, r, v, formError(http.StatusConflict, adminLastSignInMethod))
	default:
		p.adminFailed(w, r, &v, err)
	}
}
