package httpapi

import (
	"net/http"
	"net/netip"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/adapters/httpapi/ratelimit"

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
// first unless order=newest, filtered by userId and type, paged like GET
// /api/users.
func (h *handler) listAudit(c *gin.Context) {
	in := application.AuditListInput{Limit: c.Query("limit"), After: c.Query("after"),
		UserID: c.Query("userId"), Type: c.Query("type"), Order: c.Query("order")}
	page, err := h.audit.List(c.Request.Context(), principal(c), in)
	if err != nil {
		h.fail(c, err)
		return
	}
	if page.Next != "" {
		c.Header("Link", nextLink("/api/audit", page.Page.Limit, page.Next.String(),
			"userId", in.UserID, "type", in.Type, "order", in.Order))
	}
	h.writeJSON(c, http.StatusOK, toAuditEventResponses(page.Items))
}

// serveMetrics serves the metrics exposition to the clients in the
// allow-list, and to any other the 404 of an unknown route: what the
// counters show (logins failing, token reuse detected, hashing saturated)
// is for operators, not for an attacker timing its next try. It must
// never be cached.
func (h *handler) serveMetrics(next http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		ip := ratelimit.ClientIP(c.Request, h.trustedProxies)
		if !slices.ContainsFunc(h.metricsAllow, func(p netip.Prefix) bool { return ip.IsValid() && p.Contains(ip) }) {
			h.noRoute(c)
			return
		}
		c.Header("Cache-Control", "no-store")
		next.ServeHTTP(c.Writer, c.Request)
	}
}

// DefaultMetricsAllow returns the networks that may GET /metrics by
// default: loopback and the private ranges (RFC 1918, IPv6 unique local
// addresses), where a Prometheus scraper lives.
func DefaultMetricsAllow() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("fc00::/7"),
	}
}
