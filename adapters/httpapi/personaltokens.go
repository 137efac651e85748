package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// personalTokenRequest is the body of POST /api/users/{id}/tokens.
type personalTokenRequest struct {
	Name          string   `json:"name"`
	Scopes        []string `json:"scopes"`
	ExpiresInDays *int     `json:"expiresInDays"`
}

// personalTokenResponse is one token of GET /api/users/{id}/tokens: never
// the token itself, which only its creation shows.
type personalTokenResponse struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Prefix    string   `json:"prefix"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"createdAt"`
	ExpiresAt string   `json:"expiresAt"`
	// LastUsedAt is null for a token never used.
	LastUsedAt *string `json:"lastUsedAt"`
}

// personalTokenCreatedResponse is the answer of POST
// /api/users/{id}/tokens, the one place the token appears.
type personalTokenCreatedResponse struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Token     string   `json:"token"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"createdAt"`
	ExpiresAt string   `json:"expiresAt"`
}

func toPersonalTokenResponse(t domain.PersonalToken) personalTokenResponse {
	out := personalTokenResponse{ID: string(t.ID), Name: t.Name, Prefix: t.Prefix, Scopes: scopeList(t.Scopes),
		CreatedAt: formatTime(t.CreatedAt), ExpiresAt: formatTime(t.ExpiresAt)}
	if !t.LastUsedAt.IsZero() {
		last := formatTime(t.LastUsedAt)
		out.LastUsedAt = &last
	}
	return out
}

func scopeList(scopes []domain.TokenScope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// createPersonalToken answers POST /api/users/{id}/tokens.
func (h *handler) createPersonalToken(c *gin.Context) {
	var req personalTokenRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	created, err := h.tokens.Create(c.Request.Context(), principal(c), pathUser(c),
		application.CreateTokenInput{Name: req.Name, Scopes: req.Scopes, ExpiresInDays: req.ExpiresInDays})
	if err != nil {
		h.fail(c, err)
		return
	}
	t := created.PersonalToken
	// The token is a credential: no cache may keep the answer.
	c.Header("Cache-Control", "no-store")
	h.writeJSON(c, http.StatusCreated, personalTokenCreatedResponse{ID: string(t.ID), Name: t.Name,
		Token: created.Token, Scopes: scopeList(t.Scopes), CreatedAt: formatTime(t.CreatedAt),
		ExpiresAt: formatTime(t.ExpiresAt)})
}

// listPersonalTokens answers GET /api/users/{id}/tokens: the live tokens,
// newest first.
func (h *handler) listPersonalTokens(c *gin.Context) {
	list, err := h.tokens.List(c.Request.Context(), principal(c), pathUser(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]personalTokenResponse, len(list))
	for i, t := range list {
		out[i] = toPersonalTokenResponse(t)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// revokePersonalToken answers DELETE /api/users/{id}/tokens/{tokenId}.
func (h *handler) revokePersonalToken(c *gin.Context) {
	if err := h.tokens.Revoke(c.Request.Context(), principal(c), pathUser(c), c.Param("tokenId")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// tokenScope narrows a caller with a personal access token to its
// scopes: users:read for the GET (and HEAD) routes, users:write for the
// others (403 insufficient_scope). authenticate runs it on every /api
// route, so no route escapes it; a session's caller passes.
func tokenScope(c *gin.Context, p *domain.Principal) error {
	scope := domain.ScopeUsersWrite
	if m := c.Request.Method; m == http.MethodGet || m == http.MethodHead {
		scope = domain.ScopeUsersRead
	}
	return p.RequireScope(scope)
}

// interactiveOnly refuses a caller with a personal access token (403
// interactive_session_required) on the routes that change how the
// account signs in or who is signed in: its second factors, passkeys,
// sessions, tokens and linked identities. It follows authenticate on
// those routes; the application refuses a token's change of password or
// email itself (UserService.Update), since that route is otherwise open
// to tokens.
func (h *handler) interactiveOnly(c *gin.Context) {
	if err := principal(c).RequireInteractive(); err != nil {
		h.fail(c, err)
		return
	}
	c.Next()
}
