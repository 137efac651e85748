package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// identityProviderRequest is the body of POST /api/identity-providers and
// PUT /api/identity-providers/{slug}: whatever is present is set (at a
// create, the defaults fill the rest); absent or null is kept. The
// clientSecret goes in here and never comes out.
type identityProviderRequest struct {
	Slug               *string  `json:"slug"`
	DisplayName        *string  `json:"displayName"`
	Kind               *string  `json:"kind"`
	Issuer             *string  `json:"issuer"`
	ClientID           *string  `json:"clientId"`
	ClientSecret       *string  `json:"clientSecret"`
	Scopes             []string `json:"scopes"`
	AllowedDomains     []string `json:"allowedDomains"`
	AutoCreate         *bool    `json:"autoCreate"`
	TrustEmailVerified *bool    `json:"trustEmailVerified"`
	Enabled            *bool    `json:"enabled"`
	AuthURL            *string  `json:"authUrl"`
	TokenURL           *string  `json:"tokenUrl"`
	APIURL             *string  `json:"apiUrl"`
}

func (r identityProviderRequest) toInput() domain.IdentityProviderInput {
	return domain.IdentityProviderInput{
		Slug: r.Slug, DisplayName: r.DisplayName, Kind: r.Kind, Issuer: r.Issuer, ClientID: r.ClientID,
		ClientSecret: r.ClientSecret, Scopes: r.Scopes, AllowedDomains: r.AllowedDomains, AutoCreate: r.AutoCreate,
		TrustEmailVerified: r.TrustEmailVerified, Enabled: r.Enabled, AuthURL: r.AuthURL, TokenURL: r.TokenURL,
		APIURL: r.APIURL,
	}
}

// identityProviderResponse is the provider representation of the
// contract. It has no field for the client secret, not even a hint that
// one is set (a provider always has one: a create requires it), so no
// answer can leak it. The fields of the other kind are null: issuer for
// github, the endpoints for oidc (whose come from its discovery).
type identityProviderResponse struct {
	Slug               string   `json:"slug"`
	DisplayName        string   `json:"displayName"`
	Kind               string   `json:"kind"`
	Issuer             *string  `json:"issuer"`
	ClientID           string   `json:"clientId"`
	Scopes             []string `json:"scopes"`
	AllowedDomains     []string `json:"allowedDomains"`
	AutoCreate         bool     `json:"autoCreate"`
	TrustEmailVerified bool     `json:"trustEmailVerified"`
	Enabled            bool     `json:"enabled"`
	AuthURL            *string  `json:"authUrl"`
	TokenURL           *string  `json:"tokenUrl"`
	APIURL             *string  `json:"apiUrl"`
	CreatedAt          string   `json:"createdAt"`
	UpdatedAt          string   `json:"updatedAt"`
}

// nullable is s, or nil (JSON null) when it is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toIdentityProviderResponse(p domain.IdentityProvider) identityProviderResponse {
	return identityProviderResponse{
		Slug: p.Slug, DisplayName: p.DisplayName, Kind: string(p.Kind), Issuer: nullable(p.Issuer),
		ClientID: p.ClientID, Scopes: stringList(p.Scopes), AllowedDomains: stringList(p.AllowedDomains),
		AutoCreate: p.AutoCreate, TrustEmailVerified: p.TrustEmailVerified, Enabled: p.Enabled,
		AuthURL: nullable(p.AuthURL), TokenURL: nullable(p.TokenURL), APIURL: nullable(p.APIURL),
		CreatedAt: formatTime(p.CreatedAt), UpdatedAt: formatTime(p.UpdatedAt),
	}
}

// pathSlug is the path's provider slug, or a 400 invalid_id when it
// cannot be one: the contract's order puts a malformed path (400) before
// the caller's right (403), and the store is never asked about it.
// Authentication ran before (the routes require it).
func pathSlug(c *gin.Context) (string, error) {
	slug, msg := domain.ParseIdentityProviderSlug(c.Param("slug"))
	if msg != "" {
		return "", badRequest("invalid_id", "a provider's slug is 1 to 32 lower-case letters, digits and hyphens")
	}
	return slug, nil
}

// listIdentityProviders answers GET /api/identity-providers: every
// provider, by slug (there are a handful; no pages).
func (h *handler) listIdentityProviders(c *gin.Context) {
	list, err := h.providers.IdentityProviders(c.Request.Context(), principal(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]identityProviderResponse, len(list))
	for i, p := range list {
		out[i] = toIdentityProviderResponse(p)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// createIdentityProvider answers POST /api/identity-providers.
func (h *handler) createIdentityProvider(c *gin.Context) {
	var req identityProviderRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	p, err := h.providers.CreateIdentityProvider(c.Request.Context(), principal(c), req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Location", "/api/identity-providers/"+p.Slug)
	h.writeJSON(c, http.StatusCreated, toIdentityProviderResponse(p))
}

// getIdentityProvider answers GET /api/identity-providers/{slug}.
func (h *handler) getIdentityProvider(c *gin.Context) {
	slug, err := pathSlug(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	p, err := h.providers.IdentityProvider(c.Request.Context(), principal(c), slug)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toIdentityProviderResponse(p))
}

// updateIdentityProvider answers PUT /api/identity-providers/{slug}:
// fields absent are kept, the client secret too.
func (h *handler) updateIdentityProvider(c *gin.Context) {
	slug, err := pathSlug(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	var req identityProviderRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	p, err := h.providers.UpdateIdentityProvider(c.Request.Context(), principal(c), slug, req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toIdentityProviderResponse(p))
}

// deleteIdentityProvider answers DELETE /api/identity-providers/{slug};
// the identities linked through the provider go with it.
func (h *handler) deleteIdentityProvider(c *gin.Context) {
	slug, err := pathSlug(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	if err := h.providers.DeleteIdentityProvider(c.Request.Context(), principal(c), slug); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// userIdentityResponse is one identity of GET /api/users/{id}/identities.
// The subject is the provider's id of the person; the user's own id is
// the path's.
type userIdentityResponse struct {
	Provider   string `json:"provider"`
	Subject    string `json:"subject"`
	Email      string `json:"email"`
	LinkedAt   string `json:"linkedAt"`
	LastUsedAt string `json:"lastUsedAt"`
}

func toUserIdentityResponse(i domain.UserIdentity) userIdentityResponse {
	// An identity not signed in with since its link was last used then.
	last := i.LastUsedAt
	if last.IsZero() {
		last = i.LinkedAt
	}
	return userIdentityResponse{Provider: i.Provider, Subject: i.Subject, Email: string(i.Email),
		LinkedAt: formatTime(i.LinkedAt), LastUsedAt: formatTime(last)}
}

// listIdentities answers GET /api/users/{id}/identities.
func (h *handler) listIdentities(c *gin.Context) {
	list, err := h.federation.Identities(c.Request.Context(), principal(c), pathUser(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]userIdentityResponse, len(list))
	for i, id := range list {
		out[i] = toUserIdentityResponse(id)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// unlinkIdentity answers DELETE /api/users/{id}/identities/{provider}.
func (h *handler) unlinkIdentity(c *gin.Context) {
	if err := h.federation.UnlinkIdentity(c.Request.Context(), principal(c), pathUser(c), c.Param("provider")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
