package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
)

// sessionResponse is one session of GET /api/users/{id}/sessions.
type sessionResponse struct {
	ID         string   `json:"id"`
	CreatedAt  string   `json:"createdAt"`
	LastUsedAt string   `json:"lastUsedAt"`
	ExpiresAt  string   `json:"expiresAt"`
	UserAgent  string   `json:"userAgent"`
	IP         string   `json:"ip"`
	AMR        []string `json:"amr"`
	Current    bool     `json:"current"`
	// ClientID and Client name the OpenID client a session was granted
	// to; null for userd's own sessions.
	ClientID *string `json:"clientId"`
	Client   *string `json:"client"`
}

func toSessionResponse(s application.SessionView) sessionResponse {
	amr := []string(s.AMR)
	if amr == nil {
		amr = []string{}
	}
	out := sessionResponse{ID: s.ID, CreatedAt: formatTime(s.CreatedAt), LastUsedAt: formatTime(s.LastUsedAt),
		ExpiresAt: formatTime(s.ExpiresAt), UserAgent: s.UserAgent, IP: s.IP, AMR: amr, Current: s.Current}
	if s.ForClient() {
		id, name := s.ClientID.String(), s.ClientName
		out.ClientID, out.Client = &id, &name
	}
	return out
}

// pathUser is the path's user id, the caller's for "me". An anonymous
// caller never gets here (the routes require authentication).
func pathUser(c *gin.Context) string {
	id := c.Param("id")
	if p := principal(c); id == "me" && p != nil {
		return p.UserID.String()
	}
	return id
}

// listSessions answers GET /api/users/{id}/sessions.
func (h *handler) listSessions(c *gin.Context) {
	list, err := h.sessions.List(c.Request.Context(), principal(c), pathUser(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]sessionResponse, len(list))
	for i, s := range list {
		out[i] = toSessionResponse(s)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// revokeSession answers DELETE /api/users/{id}/sessions/{sid}.
func (h *handler) revokeSession(c *gin.Context) {
	if err := h.sessions.Revoke(c.Request.Context(), principal(c), pathUser(c), c.Param("sid")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// revokeSessions answers DELETE /api/users/{id}/sessions.
func (h *handler) revokeSessions(c *gin.Context) {
	if err := h.sessions.RevokeAll(c.Request.Context(), principal(c), pathUser(c)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
