package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// blockingUsers, once armed, holds the next ByID until released and
// announces its arrival.
type blockingUsers struct {
	ports.UserRepository
	armed   atomic.Bool
	block   chan struct{}
	entered chan struct{}
}

func (b *blockingUsers) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	if b.armed.CompareAndSwap(true, false) {
		b.entered <- struct{}{}
		<-b.block
	}
	return b.UserRepository.ByID(ctx, id)
}

func TestOverload_sheds_with_503_past_max_in_flight(t *testing.T) {
	t.Parallel()
	blocking := &blockingUsers{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	s := newTestServer(t, withMaxInFlight(1), withUserRepo(func(r ports.UserRepository) ports.UserRepository {
		blocking.UserRepository = r
		return blocking
	}))
	tok := s.adminToken()
	blocking.armed.Store(true)

	first := make(chan response, 1)
	go func() { first <- s.do("GET", "/api/users/me", nil, withToken(tok)) }()
	<-blocking.entered // the only slot is taken

	res := s.do("GET", "/api/users/me", nil, withToken(tok))
	wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
	if res.Header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
	// Health stays answerable under overload.
	if res := s.do("GET", "/healthz", nil); res.Status != http.StatusOK {
		t.Fatalf("healthz under overload: %d", res.Status)
	}
	close(blocking.block)
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("admitted request: %d %s", r.Status, r.Body)
	}
	// The slot is free again.
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok)), http.StatusOK, nil)
}

// 404 and 405 answers under /api and /auth are as uncacheable as the rest.
func TestCacheControl_on_unmatched_api_routes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, r := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/users/", http.StatusNotFound},
		{"GET", "/auth/login", http.StatusMethodNotAllowed},
		{"PUT", "/api/users/me", http.StatusMethodNotAllowed},
	} {
		res := s.do(r.method, r.path, nil)
		if res.Status != r.status || res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d, Cache-Control %q", r.method, r.path, res.Status, res.Header.Get("Cache-Control"))
		}
	}
}

// A body that trickles in does not hold an admission slot while it does:
// the one slot stays free for everyone else (found by test/faults case 5).
func TestOverload_slow_body_holds_no_slot(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withMaxInFlight(1))
	tok := s.adminToken()
	pr, pw := io.Pipe()
	req := httptest.NewRequest("POST", "/api/users", pr)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.handler.ServeHTTP(rec, req)
	}()
	if _, err := pw.Write([]byte(`{"name":"Slow",`)); err != nil {
		t.Fatal(err)
	}
	// The slow request is reading its body; another is served meanwhile.
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok)), http.StatusOK, nil)
	_, _ = pw.Write([]byte(`"email":"slow@example.com","password":"` + custPassword + `"}`))
	_ = pw.Close() // a PipeWriter's Close always returns nil
	<-done
	if rec.Code != http.StatusCreated {
		t.Fatalf("the slow request: %d %s", rec.Code, rec.Body)
	}
}
