package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// auditEventResponse is one entry of GET /api/audit. Absent ids and
// request data are empty strings, so that every entry has every key.
type auditEventResponse struct {
	ID        string `json:"id"`
	Time      string `json:"time"`
	Type      string `json:"type"`
	ActorID   string `json:"actorId"`
	SubjectID string `json:"subjectId"`
	ClientIP  string `json:"clientIp"`
	RequestID string `json:"requestId"`
	Detail    string `json:"detail"`
}

func toAuditEventResponses(events []domain.AuditEvent) []auditEventResponse {
	out := make([]auditEventResponse, len(events))
	for i, e := range events {
		out[i] = auditEventResponse{
			ID:        e.ID.String(),
			Time:      formatTime(e.Time),
			Type:      string(e.Type),
			ActorID:   e.ActorID.String(),
			SubjectID: e.SubjectID.String(),
			ClientIP:  e.ClientIP,
			RequestID: e.RequestID,
			Detail:    e.Detail,
		}
	}
	return out
}

// listAudit answers GET /api/audit: a page of security events, oldest
// first, paged like GET /api/users.
func (h *handler) listAudit(c *gin.Context) {
	in := application.AuditListInput{Limit: c.Query("limit"), After: c.Query("after")}
	page, err := h.audit.List(c.Request.Context(), principal(c), in)
	if err != nil {
		h.fail(c, err)
		return
	}
	if page.Next != "" {
		c.Header("Link", `</api/audit?limit=`+strconv.Itoa(page.Page.Limit)+`&after=`+page.Next.String()+`>; rel="next"`)
	}
	h.writeJSON(c, http.StatusOK, toAuditEventResponses(page.Items))
}

// serveMetrics serves the metrics exposition; it must never be cached.
func (h *handler) serveMetrics(next http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Cache-Control", "no-store")
		next.ServeHTTP(c.Writer, c.Request)
	}
}
