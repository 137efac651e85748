package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// oauthClientRequest is the body of POST /api/oauth-clients and PUT
// /api/oauth-clients/{id}: whatever is present is set (at a create, the
// defaults fill the rest); lists are nil when absent or null.
type oauthClientRequest struct {
	Name                   *string  `json:"name"`
	Type                   *string  `json:"type"`
	RedirectURIs           []string `json:"redirectUris"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectUris"`
	GrantTypes             []string `json:"grantTypes"`
	Scopes                 []string `json:"scopes"`
	FirstParty             *bool    `json:"firstParty"`
	IDTokenSigningAlg      *string  `json:"idTokenSigningAlg"`
}

func (r oauthClientRequest) toInput() domain.OAuthClientInput {
	return domain.OAuthClientInput{
		Name: r.Name, Type: r.Type, RedirectURIs: r.RedirectURIs, PostLogoutRedirectURIs: r.PostLogoutRedirectURIs,
		GrantTypes: r.GrantTypes, Scopes: r.Scopes, FirstParty: r.FirstParty, IDTokenSigningAlg: r.IDTokenSigningAlg,
	}
}

// oauthClientResponse is the client representation of the contract. It
// has no secret to leak: only oauthClientCreatedResponse and
// clientSecretResponse carry one.
type oauthClientResponse struct {
	ID                     string   `json:"id"`
	Name                   string   `json:"name"`
	Type                   string   `json:"type"`
	RedirectURIs           []string `json:"redirectUris"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectUris"`
	GrantTypes             []string `json:"grantTypes"`
	Scopes                 []string `json:"scopes"`
	FirstParty             bool     `json:"firstParty"`
	IDTokenSigningAlg      string   `json:"idTokenSigningAlg"`
	CreatedAt              string   `json:"createdAt"`
	UpdatedAt              string   `json:"updatedAt"`
}

// oauthClientCreatedResponse is the answer of a create: the client, and
// the secret of a confidential one, shown this once.
type oauthClientCreatedResponse struct {
	oauthClientResponse
	ClientSecret string `json:"clientSecret,omitempty"`
}

// clientSecretResponse is the answer of POST /api/oauth-clients/{id}/secret.
type clientSecretResponse struct {
	ClientSecret string `json:"clientSecret"`
}

// stringList returns list as strings, empty and never nil.
func stringList[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}

func toOAuthClientResponse(c domain.OAuthClient) oauthClientResponse {
	return oauthClientResponse{
		ID: c.ID.String(), Name: c.Name, Type: string(c.Type),
		RedirectURIs: stringList(c.RedirectURIs), PostLogoutRedirectURIs: stringList(c.PostLogoutRedirectURIs),
		GrantTypes: stringList(c.GrantTypes), Scopes: stringList(c.Scopes),
		FirstParty: c.FirstParty, IDTokenSigningAlg: string(c.IDTokenSigningAlg),
		CreatedAt: formatTime(c.CreatedAt), UpdatedAt: formatTime(c.UpdatedAt),
	}
}

// listOAuthClients answers GET /api/oauth-clients: a page of clients
// ordered by id, and a Link to the next page when there is one.
func (h *handler) listOAuthClients(c *gin.Context) {
	page, err := h.clients.List(c.Request.Context(), principal(c), c.Query("limit"), c.Query("after"))
	if err != nil {
		h.fail(c, err)
		return
	}
	if page.Next != "" {
		c.Header("Link", nextLink("/api/oauth-clients", page.Page.Limit, page.Next.String()))
	}
	out := make([]oauthClientResponse, len(page.Items))
	for i, oc := range page.Items {
		out[i] = toOAuthClientResponse(oc)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// createOAuthClient answers POST /api/oauth-clients.
func (h *handler) createOAuthClient(c *gin.Context) {
	var req oauthClientRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	created, err := h.clients.Create(c.Request.Context(), principal(c), req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Location", "/api/oauth-clients/"+created.Client.ID.String())
	h.writeJSON(c, http.StatusCreated, oauthClientCreatedResponse{
		oauthClientResponse: toOAuthClientResponse(created.Client), ClientSecret: created.Secret})
}

// getOAuthClient answers GET /api/oauth-clients/{id}.
func (h *handler) getOAuthClient(c *gin.Context) {
	oc, err := h.clients.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toOAuthClientResponse(oc))
}

// updateOAuthClient answers PUT /api/oauth-clients/{id}: fields absent
// are kept.
func (h *handler) updateOAuthClient(c *gin.Context) {
	var req oauthClientRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	oc, err := h.clients.Update(c.Request.Context(), principal(c), c.Param("id"), req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toOAuthClientResponse(oc))
}

// deleteOAuthClient answers DELETE /api/oauth-clients/{id}.
func (h *handler) deleteOAuthClient(c *gin.Context) {
	if err := h.clients.Delete(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// rotateOAuthClientSecret answers POST /api/oauth-clients/{id}/secret,
// whose body is none or {}.
func (h *handler) rotateOAuthClientSecret(c *gin.Context) {
	if err := decodeOptionalJSON(c.Request, &struct{}{}); err != nil {
		h.fail(c, err)
		return
	}
	secret, err := h.clients.RotateSecret(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, clientSecretResponse{ClientSecret: secret})
}
