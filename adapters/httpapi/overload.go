package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// Admission control defaults. Past MaxInFlight requests at once the
// service is beyond what two cores and one database can serve promptly;
// queueing more only stretches every request's latency towards the
// timeout. A request waits at most admissionWait for a slot, then gets a
// fast 503 that a client or load balancer can retry elsewhere.
const (
	DefaultMaxInFlight = 256
	admissionWait      = 100 * time.Millisecond
)

// admission is a counting semaphore of in-flight requests.
type admission struct {
	slots chan struct{}
}

func newAdmission(n int) *admission {
	if n <= 0 {
		n = DefaultMaxInFlight
	}
	return &admission{slots: make(chan struct{}, n)}
}

// admit sheds a request with 503 unavailable when too many are in flight.
// Health, readiness and metrics are exempt: an overloaded node must still
// say so to its orchestrator.
func (h *handler) admit(c *gin.Context) {
	if !isAPIPath(c.Request.URL.Path) {
		c.Next()
		return
	}
	select {
	case h.admission.slots <- struct{}{}:
	default:
		t := time.NewTimer(admissionWait)
		select {
		case h.admission.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			h.writeProblem(c, problem{Status: http.StatusServiceUnavailable, Code: "unavailable",
				Detail:  "the service is overloaded; retry shortly",
				headers: map[string]string{"Retry-After": "1"}})
			return
		}
	}
	defer func() { <-h.admission.slots }()
	c.Next()
}

// bufferBody reads a request's body (at most the body limit and one byte
// more) before the request takes an admission slot. A client that sends its
// body a byte at a time then holds a connection and a goroutine until the
// server's read timeout, but never a slot: slow bodies cannot lock everyone
// else out. What the handlers see is unchanged: the same bytes, the same
// read error, and an over-long body still trips the limit in apiHeaders.
func (h *handler) bufferBody(c *gin.Context) {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength > h.maxBody || !isAPIPath(r.URL.Path) {
		c.Next()
		return
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, h.maxBody+1))
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), errReader{err}))
	} else {
		r.Body = &bufferedBody{Reader: bytes.NewReader(buf), buf: buf}
	}
	c.Next()
}

// bufferedBody is a body bufferBody read whole, without error. apiHeaders
// need not limit one within the limit, and decodeJSON takes its bytes
// (unread) rather than copying them again.
type bufferedBody struct {
	*bytes.Reader
	buf []byte
}

func (*bufferedBody) Close() error { return nil }

// bufferedWithin reports whether body is a bufferedBody of at most limit
// bytes.
func bufferedWithin(body io.ReadCloser, limit int64) bool {
	b, ok := body.(*bufferedBody)
	return ok && int64(len(b.buf)) <= limit
}

// take returns the body's bytes and leaves it read, or false when a
// part of it was read already.
func (b *bufferedBody) take() ([]byte, bool) {
	if b.Len() != len(b.buf) {
		return nil, false
	}
	b.Reset(nil)
	return b.buf, true
}

// errReader replays a read error after the bytes that came before it.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// isAPIPath reports whether p is under /api/ or /auth/, the prefixes whose
// answers follow the API's header rules, admission control and caching.
func isAPIPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/auth/")
}
