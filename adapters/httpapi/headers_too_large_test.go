package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// maxHeaderBytes is the header limit cmd/userd gives its http.Server (main
// and admin listener alike).
const maxHeaderBytes = 32 << 10

// TestOpenAPI_headers_too_large checks the 431 that openapi.yaml documents
// on every operation: Go's HTTP server, not userd, refuses a request whose
// line and headers are over the limit, as plain text and before the handler
// runs. Each operation of the document is sent such a request through a
// real server, and the answer validated against the document. The answers
// are not recorded as exercising the operations: a 431 says nothing about
// userd's own handling of a route.
func TestOpenAPI_headers_too_large(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	srv := httptest.NewUnstartedServer(newTestServer(t, withAudit(), withMetrics()).handler)
	srv.Config.MaxHeaderBytes = maxHeaderBytes
	srv.Start()
	defer srv.Close()

	// Over the limit and the 4 KiB that net/http allows beyond it.
	big := strings.Repeat("x", maxHeaderBytes+8<<10)
	paths := strings.NewReplacer("{id}", "6740f1c2a1b2c3d4e5f60718", "{file}", "init.js")
	var wg sync.WaitGroup
	for _, op := range v.operations() {
		method, path, _ := strings.Cut(op, " ")
		wg.Add(1)
		// In parallel: the server lingers 0.5 s on each refused
		// connection before it closes it.
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(method, srv.URL+paths.Replace(path), nil)
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("X-Padding", big)
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Errorf("%s: %v", op, err)
				return
			}
			body, err := io.ReadAll(res.Body)
			_ = res.Body.Close()
			if err != nil {
				t.Errorf("%s: reading the answer: %v", op, err)
				return
			}
			if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("%s with %d bytes of headers: %d, want 431", op, len(big), res.StatusCode)
				return
			}
			// Go's client takes "Connection: close" out of the header and
			// sets Close instead; put it back for the validator.
			if !res.Close {
				t.Errorf("%s → 431 without Connection: close", op)
			}
			res.Header.Set("Connection", "close")
			// The validator routes by the request's path: give it one
			// without the server's origin.
			checked := httptest.NewRequest(method, paths.Replace(path), nil)
			if _, err := v.check(checked, nil, response{res.StatusCode, res.Header, body}); err != nil {
				t.Errorf("%s → 431 does not match openapi.yaml: %v\nheaders: %v\nbody: %q", op, err, res.Header, body)
			}
		}()
	}
	wg.Wait()
}
