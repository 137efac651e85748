package metrics_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

func newMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestNew_refuses_a_second_registration(t *testing.T) {
	t.Parallel()
	_, reg := newMetrics(t)
	if _, err := metrics.New(reg); err == nil {
		t.Fatal("registering twice on one registry succeeded")
	}
}

func TestSecurityEvent_moves_the_counters(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	logins := func(result string) float64 {
		return value(t, reg, "userd_logins_total", "result", result)
	}
	for range 3 {
		m.SecurityEvent(domain.AuditLoginFailed)
	}
	m.SecurityEvent(domain.AuditLoginSucceeded)
	m.SecurityEvent(domain.AuditLoginThrottled)
	m.SecurityEvent(domain.AuditLoginThrottled)
	m.SecurityEvent(domain.AuditRefreshReuseDetected)
	m.SecurityEvent(domain.AuditSessionRevoked)
	m.Refresh(ports.RefreshSucceeded)
	m.Refresh(ports.RefreshReused)
	m.Refresh(ports.RefreshReused)
	m.AuditWriteFailed()
	m.ObserveRateLimitStoreError(true)
	m.ObserveRateLimitStoreError(true)
	m.ObserveRateLimitStoreError(false)

	checks := []struct {
		name string
		got  float64
		want float64
	}{
		{"logins success", logins("success"), 1},
		{"logins failure", logins("failure"), 3},
		{"logins throttled", logins("throttled"), 2},
		{"reuse detected", value(t, reg, "userd_refresh_reuse_detected_total"), 1},
		{"refresh success", value(t, reg, "userd_refresh_total", "result", "success"), 1},
		{"refresh reuse", value(t, reg, "userd_refresh_total", "result", "reuse"), 2},
		{"refresh invalid", value(t, reg, "userd_refresh_total", "result", "invalid"), 0},
		{"events session.revoked", value(t, reg, "userd_security_events_total", "type", "session.revoked"), 1},
		{"events login.failed", value(t, reg, "userd_security_events_total", "type", "login.failed"), 3},
		{"audit write failures", value(t, reg, "userd_audit_write_failures_total"), 1},
		{"rate limit store failed open", value(t, reg, "userd_rate_limit_store_errors_total", "result", "failed_open"), 2},
		{"rate limit store failed closed", value(t, reg, "userd_rate_limit_store_errors_total", "result", "failed_closed"), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestNew_starts_fixed_series_at_zero(t *testing.T) {
	t.Parallel()
	_, reg := newMetrics(t)
	// 3 login results, 5 refresh results, one per event type.
	if n := testutil.CollectAndCount(reg, "userd_logins_total"); n != 3 {
		t.Errorf("userd_logins_total has %d series, want 3", n)
	}
	if n := testutil.CollectAndCount(reg, "userd_refresh_total"); n != 5 {
		t.Errorf("userd_refresh_total has %d series, want 5", n)
	}
	if n := testutil.CollectAndCount(reg, "userd_security_events_total"); n != len(domain.AuditEventTypes) {
		t.Errorf("userd_security_events_total has %d series, want %d", n, len(domain.AuditEventTypes))
	}
}

func TestObserveRequest_bounds_its_labels(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.ObserveRequest("/api/users/:id", "GET", 200, 3*time.Millisecond)
	m.ObserveRequest("/api/users/:id", "GET", 200, 5*time.Millisecond)
	m.ObserveRequest("", "GET", 404, time.Millisecond)
	m.ObserveRequest("", "GET", 404, time.Millisecond)
	m.ObserveRequest("", "FROBNICATE", 405, time.Millisecond)
	m.ObserveRequest("", "BREW", 405, time.Millisecond)
	m.ObserveRequest("/api/users/:id", "GET", 999, time.Millisecond)
	m.ObserveRequest("/api/users/:id", "GET", 42, time.Millisecond)

	want := `
# HELP userd_http_requests_total HTTP requests answered, by route pattern, method and status.
# TYPE userd_http_requests_total counter
userd_http_requests_total{method="GET",route="/api/users/:id",status="200"} 2
userd_http_requests_total{method="GET",route="/api/users/:id",status="other"} 2
userd_http_requests_total{method="GET",route="unmatched",status="404"} 2
userd_http_requests_total{method="other",route="unmatched",status="405"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "userd_http_requests_total"); err != nil {
		t.Error(err)
	}
	// The histogram has one series per route and method, not per status.
	if n := testutil.CollectAndCount(reg, "userd_http_request_duration_seconds"); n != 3 {
		t.Errorf("userd_http_request_duration_seconds has %d series, want 3", n)
	}
}

type fakePool struct{ stats sql.DBStats }

func (p fakePool) Stats() sql.DBStats { return p.stats }

func TestDBStatsCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewDBStatsCollector(fakePool{sql.DBStats{
		MaxOpenConnections: 20, OpenConnections: 7, InUse: 5, Idle: 2,
		WaitCount: 11, WaitDuration: 1500 * time.Millisecond, MaxIdleClosed: 3, MaxLifetimeClosed: 4,
	}}))
	want := `
# HELP userd_db_idle_connections Idle connections.
# TYPE userd_db_idle_connections gauge
userd_db_idle_connections 2
# HELP userd_db_in_use_connections Connections currently in use.
# TYPE userd_db_in_use_connections gauge
userd_db_in_use_connections 5
# HELP userd_db_open_connections Established connections, in use or idle.
# TYPE userd_db_open_connections gauge
userd_db_open_connections 7
# HELP userd_db_wait_count_total Times a request waited for a free connection.
# TYPE userd_db_wait_count_total counter
userd_db_wait_count_total 11
# HELP userd_db_wait_duration_seconds_total Total time spent waiting for a free connection.
# TYPE userd_db_wait_duration_seconds_total counter
userd_db_wait_duration_seconds_total 1.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"userd_db_idle_connections", "userd_db_in_use_connections", "userd_db_open_connections",
		"userd_db_wait_count_total", "userd_db_wait_duration_seconds_total"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(metrics.NewDBStatsCollector(fakePool{})); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestMetrics_pass_the_linter(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.ObserveRequest("/healthz", "GET", 200, time.Millisecond)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.SecurityEvent(domain.AuditLoginSucceeded)
	for _, tc := range []struct {
		accept, wantType string
	}{
		{"", "text/plain; version=0.0.4"},
		{"application/openmetrics-text; version=1.0.0", "application/openmetrics-text; version=1.0.0"},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		metrics.Handler(reg).ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.wantType) {
			t.Errorf("Accept %q: %d %q", tc.accept, rec.Code, rec.Header().Get("Content-Type"))
		}
		for _, name := range []string{`userd_logins_total{result="success"} 1`, "go_goroutines", "process_cpu_seconds_total"} {
			if !strings.Contains(body, name) {
				t.Errorf("Accept %q: exposition lacks %s", tc.accept, name)
			}
		}
	}
}

// value gathers reg and returns the value of the counter series of the
// metric with the label pairs.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// stubHasher answers as a hasher would, with the error it is given.
type stubHasher struct{ err error }

func (s stubHasher) Hash(context.Context, string) (string, error) { return "h", s.err }
func (s stubHasher) Verify(context.Context, string, string) (bool, bool, error) {
	return s.err == nil, false, s.err
}
func (stubHasher) Normalize(pw string) string { return pw }
func (stubHasher) CheckEncoded(string) error  { return nil }

func TestCountHashing_counts_each_call_by_result(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	if n := testutil.CollectAndCount(reg, "userd_password_hashing_total"); n != 6 {
		t.Errorf("userd_password_hashing_total has %d series, want 6 from the start", n)
	}
	done := m.CountHashing(stubHasher{})
	busy := m.CountHashing(stubHasher{err: fmt.Errorf("password hashing busy: %w", domain.ErrUnavailable)})
	gaveUp := m.CountHashing(stubHasher{err: context.Canceled})
	bad := m.CountHashing(stubHasher{err: errors.New("malformed password hash")})
	for range 3 {
		_, _, _ = done.Verify(t.Context(), "h", "pw")
	}
	_, _ = done.Hash(t.Context(), "pw")
	_, _, _ = busy.Verify(t.Context(), "h", "pw")
	_, _, _ = gaveUp.Verify(t.Context(), "h", "pw")
	_, _ = busy.Hash(t.Context(), "pw")
	_, _, _ = bad.Verify(t.Context(), "h", "pw")
	_ = done.Normalize("pw")
	_ = done.CheckEncoded("h")
	for _, c := range []struct {
		op, result string
		want       float64
	}{
		{"verify", "done", 3}, {"verify", "busy", 2}, {"verify", "error", 1},
		{"hash", "done", 1}, {"hash", "busy", 1}, {"hash", "error", 0},
	} {
		if got := value(t, reg, "userd_password_hashing_total", "op", c.op, "result", c.result); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.op, c.result, got, c.want)
		}
	}
}

func TestHookCalled_counts_by_result(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.HookCalled(ports.HookClaimsAnswered, time.Millisecond)
	m.HookCalled(ports.HookClaimsAnswered, time.Millisecond)
	m.HookCalled(ports.HookUnavailable, 2*time.Second)
	m.HookCalled("something new", time.Millisecond)
	for result, want := range map[string]float64{"claims": 2, "unavailable": 1, "refused": 0, "failed": 0, "other": 1} {
		if got := value(t, reg, "userd_claims_hook_calls_total", "result", result); got != want {
			t.Errorf("userd_claims_hook_calls_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	if n := testutil.CollectAndCount(reg, "userd_claims_hook_duration_seconds"); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}
}
