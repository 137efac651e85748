package federation_test

import (
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/federation"
)

// countingTransport records the paths of the requests it passes on.
type countingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	paths []string
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, req.URL.Path)
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// Options.WrapTransport (cmd's tracing) sees every call to the provider:
// discovery, the token endpoint, the keys.
func TestWrapTransport_sees_every_call(t *testing.T) {
	f := newFakeIssuer(t)
	var wrapped *countingTransport
	c := federation.New(federation.Options{
		Logger: slog.New(slog.DiscardHandler),
		Clock:  f.clock,
		WrapTransport: func(next http.RoundTripper) http.RoundTripper {
			wrapped = &countingTransport{next: next}
			return wrapped
		},
	})
	if _, _, _, err := signIn(t, c, f, oidcProvider(f)); err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if wrapped == nil {
		t.Fatal("WrapTransport never called")
	}
	wrapped.mu.Lock()
	defer wrapped.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range wrapped.paths {
		seen[p] = true
	}
	if !seen["/.well-known/openid-configuration"] || len(wrapped.paths) < 3 {
		t.Errorf("calls through the wrapped transport: %v, want discovery, token and keys", wrapped.paths)
	}
}
