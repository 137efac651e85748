package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// readyTimeout bounds the store ping of /readyz: a probe that hangs is
// worse than one that says no.
const readyTimeout = 2 * time.Second

func (h *handler) healthz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	h.writeJSON(c, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *handler) readyz(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	if h.health != nil {
		ctx, cancel := context.WithTimeout(c.Request.Context(), readyTimeout)
		defer cancel()
		if err := h.health.Ping(ctx); err != nil {
			// Whatever the cause, the answer is "not ready"; the cause
			// goes to the log, not to the prober.
			h.log.LogAttrs(c.Request.Context(), slog.LevelWarn, "readiness check failed",
				slog.String("request_id", RequestID(c.Request.Context())), slog.String("error", err.Error()))
			h.fail(c, domain.ErrUnavailable)
			return
		}
	}
	h.writeJSON(c, http.StatusOK, map[string]string{"status": "ready"})
}

// jwks publishes the access-token verification keys. They change only on
// rotation: a rotated-out key stays published while its tokens live, and a
// rotated-in key signs only once the cached copies without it have
// expired, so the set may be cached for as long as its source says.
func (h *handler) jwks(c *gin.Context) {
	c.Header("Cache-Control", "public, max-age="+strconv.Itoa(int(h.keySet.JWKSMaxAge()/time.Second)))
	writeBody(c, http.StatusOK, jsonContentTypeValue, h.keySet.JWKSJSON())
}

func methodNotAllowed() problem {
	return problem{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Detail: "this method is not allowed here; the Allow header lists those that are"}
}

func (h *handler) noRoute(c *gin.Context) {
	h.writeProblem(c, problem{Status: http.StatusNotFound, Code: "not_found", Detail: "no resource at this path"})
}

// noMethod answers a known path with a method it lacks; gin has set Allow.
func (h *handler) noMethod(c *gin.Context) {
	if c.Request.URL.Path == "/api/users/me" {
		// gin would list PUT and DELETE too, having found them on
		// /api/users/me for the explicit 405 routes.
		c.Header("Allow", http.MethodGet)
	}
	h.writeProblem(c, methodNotAllowed())
}

func (h *handler) writeJSON(c *gin.Context, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		h.fail(c, err)
		return
	}
	writeBody(c, status, jsonContentTypeValue, body)
}

// The Content-Type values of writeBody, shared by every answer as
// requestID's header values are.
var (
	jsonContentTypeValue    = []string{"application/json"}
	problemContentTypeValue = []string{problemContentType}
)

// writeBody is what gin's c.Data does (the status, the Content-Type
// unless one is set, the body unless the status has none) without its
// two allocations: the render.Data boxed into an interface, and the
// header value's slice.
func writeBody(c *gin.Context, status int, contentType []string, body []byte) {
	c.Status(status)
	if h := c.Writer.Header(); len(h["Content-Type"]) == 0 {
		h["Content-Type"] = contentType
	}
	if status < http.StatusOK || status == http.StatusNoContent || status == http.StatusNotModified {
		c.Writer.WriteHeaderNow()
		return
	}
	if _, err := c.Writer.Write(body); err != nil {
		_ = c.Error(err)
		c.Abort()
	}
}
