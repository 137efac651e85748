package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/ports"
)

// fakeLimitStore answers TakeAll with err when set, and otherwise from
// buckets of its own (a count per key, no refill), recording every call.
type fakeLimitStore struct {
	mu    sync.Mutex
	err   error
	taken map[string]int
	calls [][]ports.RateLimitBucket
}

func (f *fakeLimitStore) TakeAll(_ context.Context, buckets []ports.RateLimitBucket) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, slices.Clone(buckets))
	if f.err != nil {
		return false, 0, f.err
	}
	if f.taken == nil {
		f.taken = map[string]int{}
	}
	for _, b := range buckets {
		if f.taken[b.Limiter+"|"+b.Client] >= b.Limit {
			return false, b.Period / time.Duration(b.Limit), nil
		}
	}
	for _, b := range buckets {
		f.taken[b.Limiter+"|"+b.Client]++
	}
	return true, 0, nil
}

// storeErrors counts the failures httpapi reports.
type storeErrors struct {
	mu           sync.Mutex
	open, closed int
}

func (s *storeErrors) ObserveRateLimitStoreError(failedOpen bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if failedOpen {
		s.open++
	} else {
		s.closed++
	}
}

func withRateLimitStore(store ports.RateLimitStore, failClosed bool, m httpapi.RateLimitStoreObserver) serverOption {
	return func(c *serverConfig) { c.limitStore, c.failClosed, c.limitMetrics = store, failClosed, m }
}

var errRedisDown = errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")

// With a store, the buckets are the store's: one call per request, with
// every limiter's bucket (all or none is the store's to keep), the client
// keyed as the in-memory limiter keys it, and the store's wait in
// Retry-After.
func TestRateLimitStore_holds_the_buckets(t *testing.T) {
	t.Parallel()
	store := &fakeLimitStore{}
	s := newTestServer(t, withAuthIPLimit(2), withRegisterIPLimit(1), withRateLimitStore(store, false, nil))
	login := map[string]string{"email": "a@example.com", "password": "a wrong guess"}
	v6 := withPeer("[2001:db8:1:2::1]:1")
	wantProblem(t, s.do("POST", "/auth/login", login, v6), http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/login", login, withPeer("[2001:db8:1:2::99]:1")), http.StatusUnauthorized, "invalid_credentials")
	res := s.do("POST", "/auth/login", login, v6)
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if got := res.Header.Get("Retry-After"); got != "30" {
		t.Fatalf("Retry-After = %q, want the store's 30", got)
	}
	if res := s.do("POST", "/api/users", registration("b@example.com"), withPeer("192.0.2.60:1")); res.Status != http.StatusCreated {
		t.Fatalf("registration: %d %s", res.Status, res.Body)
	}
	want := [][]ports.RateLimitBucket{
		{{Limiter: "auth", Client: "2001:db8:1:2::/64", Limit: 2, Period: time.Minute}},
		{{Limiter: "auth", Client: "2001:db8:1:2::/64", Limit: 2, Period: time.Minute}},
		{{Limiter: "auth", Client: "2001:db8:1:2::/64", Limit: 2, Period: time.Minute}},
		{{Limiter: "auth", Client: "192.0.2.60", Limit: 2, Period: time.Minute},
			{Limiter: "register", Client: "192.0.2.60", Limit: 1, Period: time.Hour}},
	}
	if !slices.EqualFunc(store.calls, want, slices.Equal) {
		t.Fatalf("calls %+v, want %+v", store.calls, want)
	}
}

// USERD_RATE_LIMIT_FAIL=open: while the store fails, requests are
// admitted; the failures are counted one by one and logged once a period.
func TestRateLimitStore_failing_open_admits_logs_once_and_counts(t *testing.T) {
	t.Parallel()
	m := &storeErrors{}
	s := newTestServer(t, withAuthIPLimit(1), withRegisterIPLimit(1),
		withRateLimitStore(&fakeLimitStore{err: errRedisDown}, false, m))
	login := map[string]string{"email": "a@example.com", "password": "a wrong guess"}
	for range 3 {
		wantProblem(t, s.do("POST", "/auth/login", login), http.StatusUnauthorized, "invalid_credentials")
	}
	if res := s.do("POST", "/api/users", registration("b@example.com")); res.Status != http.StatusCreated {
		t.Fatalf("registration: %d %s", res.Status, res.Body)
	}
	if m.open != 4 || m.closed != 0 {
		t.Fatalf("counted open=%d closed=%d, want 4 and 0", m.open, m.closed)
	}
	logs := s.logs.String()
	if n := strings.Count(logs, "rate limit store failed"); n != 1 {
		t.Fatalf("%d log lines of the failure, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "connection refused") || !strings.Contains(logs, `"failed_open":true`) {
		t.Fatalf("the log line does not say what failed:\n%s", logs)
	}
}

// USERD_RATE_LIMIT_FAIL=closed: while the store fails, the requests under
// the limits get 503 unavailable (the limit could not be checked; a 429
// would blame the client), the pages their own 503 page; the rest of the
// API is untouched.
func TestRateLimitStore_failing_closed_refuses_with_503(t *testing.T) {
	t.Parallel()
	m := &storeErrors{}
	store := &fakeLimitStore{}
	s := newTestServer(t, withAuthIPLimit(5), withRegisterIPLimit(5), withRateLimitStore(store, true, m))
	admin := s.adminToken()
	store.mu.Lock()
	store.err = errRedisDown // Redis goes away
	store.mu.Unlock()
	res := s.do("POST", "/auth/login", map[string]string{"email": "a@example.com", "password": "a wrong guess"})
	wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
	if res.Header.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
	wantProblem(t, s.do("POST", "/api/users", registration("b@example.com")), http.StatusServiceUnavailable, "unavailable")
	wantHTML(t, s.submit("/account/reset-password", url.Values{"token": {"x"}, "password": {"p"}, "confirm": {"p"}}),
		http.StatusServiceUnavailable, "The service is unavailable")
	if res := s.do("GET", "/api/users", nil, withToken(admin)); res.Status != http.StatusOK {
		t.Fatalf("a read: %d %s", res.Status, res.Body)
	}
	if m.closed != 3 || m.open != 0 {
		t.Fatalf("counted open=%d closed=%d, want 0 and 3", m.open, m.closed)
	}
}
