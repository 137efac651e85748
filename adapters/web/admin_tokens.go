package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// routeAdminTokens routes the revoke of a user's personal access token,
// from the user's page: asked first, as the console's other actions that
// cannot be undone. An admin lists and revokes another's tokens, never
// makes one (only the user makes its own).
func (p *Pages) routeAdminTokens(route func(pattern string, h pageHandler)) {
	revoke := adminUsersPath + "/{id}/tokens/{tid}/revoke"
	route("GET "+revoke, p.adminConfirmRevokeToken)
	route("POST "+revoke, p.adminRevokeToken)
}

// adminTokenPath is the revoke (its confirm page, and the POST) of the
// user id's token tid.
func adminTokenPath(id domain.UserID, tid domain.PersonalTokenID) string {
	return userPath(id) + "/tokens/" + url.PathEscape(string(tid)) + "/revoke"
}

// userTokenRows are the live tokens of the user u, for the user's page.
func (p *Pages) userTokenRows(ctx context.Context, v visitor, u domain.User) ([]tokenRow, error) {
	tokens, err := p.svc.Tokens.List(ctx, v.principal, string(u.ID))
	if err != nil {
		return nil, err
	}
	return newTokenRows(tokens, func(tid domain.PersonalTokenID) string { return adminTokenPath(u.ID, tid) }), nil
}

// adminConfirmRevokeToken asks before the user's token of the path is
// revoked.
func (p *Pages) adminConfirmRevokeToken(w http.ResponseWriter, r *http.Request, v visitor) {
	ctx := r.Context()
	u, err := p.svc.Users.Get(ctx, v.principal, r.PathValue("id"))
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	rows, err := p.userTokenRows(ctx, v, u)
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	for _, row := range rows {
		if row.ID != r.PathValue("tid") {
			continue
		}
		pg := newPage(adminArea, &v, tmplAdminConfirm, "Revoke the token “"+row.Name+"” of "+string(u.Email)+"?")
		pg.Nav = adminUsersPath
		pg.Data = confirmData{Paragraphs: []string{
			"The token starting with " + row.Prefix + " (scopes " + row.Scopes + ", expires " + row.Expires +
				") stops working at once: a script that uses it is refused.",
			"Its owner can create a new one from their account page."},
			Action: row.Revoke, Button: "Revoke the token", ButtonID: "confirm-revoke-token", Cancel: userPath(u.ID)}
		p.renderConsole(w, r, http.StatusOK, pg)
		return
	}
	p.adminNotFound(w, r, &v, http.StatusNotFound, "Token not found", "live token")
}

// adminRevokeToken revokes the user's token of the path, as DELETE
// /api/users/{id}/tokens/{tokenId} does, and goes back to the user's
// page.
func (p *Pages) adminRevokeToken(w http.ResponseWriter, r *http.Request, v visitor) {
	err := p.svc.Tokens.Revoke(r.Context(), v.principal, r.PathValue("id"), r.PathValue("tid"))
	switch {
	case err == nil:
		p.afterUserAction(w, r, v, "token-revoked")
	case errors.Is(err, domain.ErrPersonalTokenNotFound):
		p.afterUserAction(w, r, v, "token-gone")
	default:
		p.adminFailed(w, r, &v, err)
	}
}
