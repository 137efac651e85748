package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/application"
)

// observation is the audit trail and the metrics of a test server.
type observation struct {
	audit        *memory.AuditLog
	registry     *prometheus.Registry
	metrics      *metrics.Metrics
	metricsAllow []netip.Prefix
}

// withAudit records security events in memory and serves GET /api/audit.
func withAudit() serverOption {
	return func(c *serverConfig) {
		if c.observe == nil {
			c.observe = &observation{}
		}
		c.observe.audit = memory.NewAuditLog()
	}
}

// withMetrics counts requests and security events and serves GET /metrics.
func withMetrics() serverOption {
	return func(c *serverConfig) {
		if c.observe == nil {
			c.observe = &observation{}
		}
		c.observe.registry = prometheus.NewRegistry()
		m, err := metrics.New(c.observe.registry)
		if err != nil {
			panic(err)
		}
		c.observe.metrics = m
	}
}

// withMetricsAllow serves /metrics (withMetrics) to these networks only.
func withMetricsAllow(prefixes ...string) serverOption {
	return func(c *serverConfig) {
		withMetrics()(c)
		c.observe.metricsAllow = []netip.Prefix{}
		for _, p := range prefixes {
			c.observe.metricsAllow = append(c.observe.metricsAllow, netip.MustParsePrefix(p))
		}
	}
}

// wire gives the services the audit log and the counters, when set.
func (o *observation) wire(deps *application.Deps) {
	if o == nil {
		return
	}
	if o.audit != nil {
		deps.Stores.Audit = o.audit
	}
	if o.metrics != nil {
		deps.Metrics = o.metrics
	}
}

// apply adds the metrics to the handler's options.
func (o *observation) apply(opts *httpapi.Options) {
	if o == nil {
		return
	}
	if o.metrics != nil {
		opts.Metrics = o.metrics
		opts.MetricsHandler = metrics.Handler(o.registry)
		// The harness's requests come from httptest's 192.0.2.1, a
		// public address: the tests that read /metrics are its scraper.
		opts.MetricsAllow = append(httpapi.DefaultMetricsAllow(), netip.MustParsePrefix("192.0.2.1/32"))
		if o.metricsAllow != nil {
			opts.MetricsAllow = o.metricsAllow
		}
	}
}

// auditEventBody is an entry of GET /api/audit; decoding with
// DisallowUnknownFields proves it has nothing else.
type auditEventBody struct {
	ID        string `json:"id"`
	Time      string `json:"time"`
	Type      string `json:"type"`
	ActorID   string `json:"actorId"`
	SubjectID string `json:"subjectId"`
	ClientIP  string `json:"clientIp"`
	RequestID string `json:"requestId"`
	Detail    string `json:"detail"`
}

func (s *testServer) auditPage(token, query string) ([]auditEventBody, response) {
	s.t.Helper()
	res := s.do("GET", "/api/audit"+query, nil, withToken(token))
	var events []auditEventBody
	wantJSON(s.t, res, http.StatusOK, &events)
	return events, res
}

func TestAudit_list_shows_what_happened(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	admin := s.createAdmin()
	adminTok := s.login(adminEmail, adminPassword).AccessToken
	ada := s.register("Ada", "ada@example.com")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "wrong-Secret-Phrase-3"},
		withHeader("X-Request-Id", "trace-failed-login"), withPeer("203.0.113.9:4711")),
		http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ghost@example.com", "password": "wrong-Secret-Phrase-3"}),
		http.StatusUnauthorized, "invalid_credentials")
	if res := s.do("DELETE", "/api/users/"+ada.ID, nil, withToken(adminTok)); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", res.Status)
	}

	events, res := s.auditPage(adminTok, "")
	if res.Header.Get("Link") != "" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Link %q, Cache-Control %q", res.Header.Get("Link"), res.Header.Get("Cache-Control"))
	}
	var got []string
	for _, e := range events {
		got = append(got, e.Type+" actor="+e.ActorID+" subject="+e.SubjectID)
	}
	want := []string{
		"user.created actor= subject=" + admin.ID.String(), // EnsureAdmin, as the bootstrap does
		"login.succeeded actor=" + admin.ID.String() + " subject=" + admin.ID.String(),
		"user.created actor= subject=" + ada.ID,
		"login.failed actor= subject=" + ada.ID,
		"login.failed actor= subject=",
		"user.deleted actor=" + admin.ID.String() + " subject=" + ada.ID,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	failed := events[3]
	if failed.ClientIP != "203.0.113.9" || failed.RequestID != "trace-failed-login" || failed.Detail != "via=login reason=wrong_password" {
		t.Errorf("failed login event %+v", failed)
	}
	if events[4].Detail != "via=login reason=unknown_email" || strings.Contains(string(res.Body), "ghost") {
		t.Errorf("a failed login for an unknown email keeps the email: %+v", events[4])
	}
	idPattern := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for i, e := range events {
		if !idPattern.MatchString(e.ID) || (i > 0 && e.ID <= events[i-1].ID) {
			t.Errorf("event %d id %q: want 32 hex characters, ascending", i, e.ID)
		}
		if _, err := time.Parse(time.RFC3339, e.Time); err != nil || !strings.HasSuffix(e.Time, "Z") {
			t.Errorf("event %d time %q: want RFC 3339 UTC", i, e.Time)
		}
		if e.RequestID == "" && e.Type != "user.created" {
			t.Errorf("event %d (%s) has no request id", i, e.Type)
		}
	}
	for _, secret := range []string{adminPassword, custPassword, "wrong-Secret-Phrase-3", "$argon2id$", adminTok} {
		if strings.Contains(string(res.Body), secret) {
			t.Errorf("the audit trail holds the secret %q", secret)
		}
	}
}

func TestAudit_client_ip_behind_a_trusted_proxy(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit(), withAuthIPLimit(0, "10.0.0.0/8"))
	adminTok := s.adminToken()
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ghost@example.com", "password": "wrong-Secret-Phrase-3"},
		withPeer("10.0.0.5:443"), withHeader("X-Forwarded-For", "198.51.100.23, 10.0.0.9")),
		http.StatusUnauthorized, "invalid_credentials")
	events, _ := s.auditPage(adminTok, "")
	if last := events[len(events)-1]; last.Type != "login.failed" || last.ClientIP != "198.51.100.23" {
		t.Errorf("last event %+v, want a failed login from 198.51.100.23", last)
	}
}

func TestAudit_access(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	adminTok := s.adminToken()
	_, cust := s.customer("Ada", "ada@example.com")

	res := s.do("GET", "/api/audit", nil)
	wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
	if res.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
	}
	wantProblem(t, s.do("GET", "/api/audit", nil, withToken(adminTok+"x")), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("GET", "/api/audit", nil, withToken(cust.AccessToken)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("GET", "/api/audit", nil, withToken(adminTok), withHeader("Accept", "text/html")),
		http.StatusNotAcceptable, "not_acceptable")
	wantProblem(t, s.do("POST", "/api/audit", nil, withToken(adminTok)), http.StatusMethodNotAllowed, "method_not_allowed")

	for _, tc := range []struct{ query, field string }{
		{"?limit=0", "limit"},
		{"?limit=201", "limit"},
		{"?limit=ten", "limit"},
		{"?after=not-an-id", "after"},
		{"?after=000000000000000000000000", "after"}, // a user id is not an audit id
	} {
		for _, tok := range []string{adminTok, cust.AccessToken} {
			// The form of the request is judged before the caller's rights.
			p := wantProblem(t, s.do("GET", "/api/audit"+tc.query, nil, withToken(tok)), http.StatusBadRequest, "invalid_parameter")
			if !slices.Equal(p.Fields(), []string{tc.field}) {
				t.Errorf("%s: errors name %v, want %s", tc.query, p.Fields(), tc.field)
			}
		}
	}
	// Empty parameters count as absent.
	if events, _ := s.auditPage(adminTok, "?limit=&after="); len(events) == 0 {
		t.Error("no events with empty parameters")
	}
}

func TestAudit_pagination(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	adminTok := s.adminToken()
	for range 4 {
		wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ghost@example.com", "password": "wrong-Secret-Phrase-3"}),
			http.StatusUnauthorized, "invalid_credentials")
	}
	all, _ := s.auditPage(adminTok, "?limit=200")
	if len(all) != 6 { // admin created, admin login, 4 failures
		t.Fatalf("%d events, want 6", len(all))
	}

	var paged []auditEventBody
	next := "/api/audit?limit=4"
	linkPattern := regexp.MustCompile(`^<(/api/audit\?limit=4&after=[0-9a-f]{32})>; rel="next"$`)
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("pagination does not end")
		}
		events, res := s.auditPage(adminTok, strings.TrimPrefix(next, "/api/audit"))
		paged = append(paged, events...)
		next = ""
		if link := res.Header.Get("Link"); link != "" {
			m := linkPattern.FindStringSubmatch(link)
			if m == nil {
				t.Fatalf("Link %q", link)
			}
			next = m[1]
		}
	}
	if len(paged) != len(all) {
		t.Fatalf("pages hold %d events, want %d", len(paged), len(all))
	}
	for i := range all {
		if paged[i] != all[i] {
			t.Errorf("event %d differs: %+v vs %+v", i, paged[i], all[i])
		}
	}
	// A page that ends exactly at the last event has no Link.
	if _, res := s.auditPage(adminTok, "?limit=6"); res.Header.Get("Link") != "" {
		t.Errorf("Link on the last page: %q", res.Header.Get("Link"))
	}
}

func TestAudit_filters_and_order(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	admin := s.createAdmin()
	adminTok := s.login(adminEmail, adminPassword).AccessToken
	ada, adaTok := s.customer("Ada", "ada@example.com") // user.created, login.succeeded
	bob := s.register("Bob", "bob@example.com")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "wrong-Secret-Phrase-3"}),
		http.StatusUnauthorized, "invalid_credentials")
	if res := s.do("DELETE", "/api/users/"+bob.ID, nil, withToken(adminTok)); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", res.Status)
	}
	all, _ := s.auditPage(adminTok, "?limit=200")
	// walk follows the Link headers from query and returns every event,
	// checking that each Link keeps the filters and the order.
	walk := func(t *testing.T, query, keep string) []auditEventBody {
		t.Helper()
		link := regexp.MustCompile(`^</api/audit\?limit=2&after=[0-9a-f]{32}` + regexp.QuoteMeta(keep) + `>; rel="next"$`)
		var got []auditEventBody
		next := "/api/audit" + query
		for pages := 0; next != ""; pages++ {
			if pages > len(all) {
				t.Fatal("pagination does not end")
			}
			events, res := s.auditPage(adminTok, strings.TrimPrefix(next, "/api/audit"))
			got = append(got, events...)
			next = ""
			if l := res.Header.Get("Link"); l != "" {
				if !link.MatchString(l) {
					t.Fatalf("Link %q does not keep %q", l, keep)
				}
				next = nextPath(t, l)
			}
		}
		return got
	}
	pick := func(keep func(e auditEventBody) bool, newest bool) []auditEventBody {
		var out []auditEventBody
		for _, e := range all {
			if keep(e) {
				out = append(out, e)
			}
		}
		if newest {
			slices.Reverse(out)
		}
		return out
	}
	about := func(id string) func(e auditEventBody) bool {
		return func(e auditEventBody) bool { return e.ActorID == id || e.SubjectID == id }
	}
	ofType := func(typ string) func(e auditEventBody) bool {
		return func(e auditEventBody) bool { return e.Type == typ }
	}
	for _, tc := range []struct {
		name, query, keep string
		want              []auditEventBody
	}{
		{"newest", "?limit=2&order=newest", "&order=newest", pick(func(auditEventBody) bool { return true }, true)},
		{"oldest", "?limit=2&order=oldest", "&order=oldest", all},
		{"user", "?limit=2&userId=" + ada.ID, "&userId=" + ada.ID, pick(about(ada.ID), false)},
		{"user_as_actor", "?limit=2&userId=" + admin.ID.String(), "&userId=" + admin.ID.String(), pick(about(admin.ID.String()), false)},
		{"type", "?limit=2&type=login.succeeded", "&type=login.succeeded", pick(ofType("login.succeeded"), false)},
		{"everything", "?limit=2&order=newest&type=user.created&userId=" + bob.ID, "&userId=" + bob.ID + "&type=user.created&order=newest",
			pick(func(e auditEventBody) bool { return about(bob.ID)(e) && e.Type == "user.created" }, true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.want) == 0 {
				t.Fatal("the scenario has no such events")
			}
			if got := walk(t, tc.query, tc.keep); !slices.Equal(got, tc.want) {
				t.Errorf("events:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// The events of ada as actor and as subject: created, signed in, failed.
	var got []string
	for _, e := range walk(t, "?limit=2&userId="+ada.ID, "&userId="+ada.ID) {
		got = append(got, e.Type)
	}
	if want := []string{"user.created", "login.succeeded", "login.failed"}; !slices.Equal(got, want) {
		t.Errorf("ada's events %q, want %q", got, want)
	}

	for _, tc := range []struct {
		query  string
		fields []string
	}{
		{"?userId=ada", []string{"userId"}},
		{"?userId=" + strings.ToUpper(ada.ID), []string{"userId"}},
		{"?type=login", []string{"type"}},
		{"?order=desc", []string{"order"}},
		{"?order=newest&type=x&userId=y&limit=5", []string{"userId", "type"}},
	} {
		for _, tok := range []string{adminTok, adaTok.AccessToken} {
			// The form of the request is judged before the caller's rights.
			p := wantProblem(t, s.do("GET", "/api/audit"+tc.query, nil, withToken(tok)), http.StatusBadRequest, "validation_failed")
			if !slices.Equal(p.Fields(), tc.fields) {
				t.Errorf("%s: errors name %v, want %v", tc.query, p.Fields(), tc.fields)
			}
		}
	}
	// The page's bounds come first; then the right.
	p := wantProblem(t, s.do("GET", "/api/audit?limit=0&type=x", nil, withToken(adminTok)), http.StatusBadRequest, "invalid_parameter")
	if !slices.Equal(p.Fields(), []string{"limit"}) {
		t.Errorf("errors name %v, want limit", p.Fields())
	}
	wantProblem(t, s.do("GET", "/api/audit?userId="+ada.ID, nil, withToken(adaTok.AccessToken)), http.StatusForbidden, "forbidden")
	// Empty filters count as absent.
	if events, _ := s.auditPage(adminTok, "?limit=200&userId=&type=&order="); !slices.Equal(events, all) {
		t.Errorf("empty filters: %d events, want all %d", len(events), len(all))
	}
}

// Without an audit log the trail is empty, and without a metrics handler
// /metrics is not served.
func TestAudit_and_metrics_without_them(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	var events []auditEventBody
	wantJSON(t, s.do("GET", "/api/audit", nil, withToken(s.adminToken())), http.StatusOK, &events)
	if len(events) != 0 {
		t.Errorf("%d events without an audit log", len(events))
	}
	wantProblem(t, s.do("GET", "/metrics", nil), http.StatusNotFound, "not_found")
}

func TestMetrics_endpoint(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withMetrics(), withAudit())
	_, cust := s.customer("Ada", "ada@example.com")
	wantJSON(t, s.do("GET", "/api/users/"+cust.User.ID, nil, withToken(cust.AccessToken)), http.StatusOK, nil)
	wantProblem(t, s.do("GET", "/no/such/path/"+cust.User.ID, nil), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "wrong-Secret-Phrase-3"}),
		http.StatusUnauthorized, "invalid_credentials")

	res := s.do("GET", "/metrics", nil, withoutHeader("Accept"))
	if res.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %d", res.Status)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q, want the Prometheus text format", ct)
	}
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control = %q", res.Header.Get("Cache-Control"))
	}
	body := string(res.Body)
	for _, want := range []string{
		`userd_http_requests_total{method="GET",route="/api/users/:id",status="200"} 1`,
		`userd_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`userd_http_requests_total{method="POST",route="/auth/login",status="401"} 1`,
		`userd_http_request_duration_seconds_count{method="GET",route="/api/users/:id"} 1`,
		`userd_logins_total{result="success"} 1`,
		`userd_logins_total{result="failure"} 1`,
		`userd_logins_total{result="throttled"} 0`,
		`userd_security_events_total{type="user.created"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the exposition lacks %s", want)
		}
	}
	// Never a raw path: the id of the request above is nowhere.
	if strings.Contains(body, cust.User.ID) {
		t.Error("a raw path reached a label")
	}

	// A scraper that asks for OpenMetrics gets it.
	res = s.do("GET", "/metrics", nil, withHeader("Accept", "application/openmetrics-text; version=1.0.0"))
	if ct := res.Header.Get("Content-Type"); res.Status != http.StatusOK || !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("OpenMetrics: %d %q", res.Status, ct)
	}
	if !bytes.HasSuffix(res.Body, []byte("# EOF\n")) {
		t.Error("the OpenMetrics exposition does not end with # EOF")
	}

	// The scrapes were counted too, under their route.
	res = s.do("GET", "/metrics", nil)
	if !strings.Contains(string(res.Body), `userd_http_requests_total{method="GET",route="/metrics",status="200"} 2`) {
		t.Error("scrapes of /metrics are not counted under route /metrics")
	}
}

func TestMetrics_not_on_the_main_listener_without_a_handler(t *testing.T) {
	t.Parallel()
	// As with USERD_ADMIN_ADDR: requests are observed, /metrics is elsewhere.
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := httpapi.New(&application.Services{}, httpapi.Options{Metrics: m})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /metrics = %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !json.Valid(body) {
		t.Fatalf("healthz: %d %s", rec.Code, body)
	}
	rec = httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`userd_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`userd_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the exposition lacks %s", want)
		}
	}
}
