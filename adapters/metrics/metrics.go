// Package metrics is the Prometheus adapter of userd: it counts HTTP
// requests for the HTTP adapter (httpapi.RequestObserver), security events
// for the application (ports.SecurityMetrics), the work of the password
// hasher (CountingHasher, wrapped around it by cmd), and exposes the
// database pool's statistics, all on a registry of its caller's making (never the
// global one), served by Handler.
//
// Label values are bounded by construction: a route is a route pattern or
// "unmatched", a method one of the standard ones or "other", a status a
// number below 600, and the other labels take fixed values.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// namespace prefixes every metric of userd's own.
const namespace = "userd"

// UnmatchedRoute is the route label of requests that matched no route, so
// that scanners probing random paths cannot create new series.
const UnmatchedRoute = "unmatched"

// Login results, the values of userd_logins_total's result label.
const (
	LoginSuccess   = "success"
	LoginFailure   = "failure"
	LoginThrottled = "throttled"
)

// Metrics holds userd's own collectors. Its methods are safe for
// concurrent use.
type Metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	logins        *prometheus.CounterVec
	reuse         prometheus.Counter
	refreshes     *prometheus.CounterVec
	events        *prometheus.CounterVec
	auditFailures prometheus.Counter
	hashing       *prometheus.CounterVec
	outbox        *prometheus.CounterVec
	limitStore    *prometheus.CounterVec
	purged        *prometheus.CounterVec
	hookCalls     *prometheus.CounterVec
	hookDuration  prometheus.Histogram
	accountCache  accountCacheCounters
	// series holds a requestSeries by requestKey: a request's two series
	// found once, not by hashing their labels at every request (about 2 %
	// of a signed-in read's CPU). The keys are as bounded as the labels.
	series sync.Map
}

// requestKey is a request's route, method and status, as labelled.
type requestKey struct {
	route, method string
	status        int
}

// requestSeries are the series ObserveRequest adds a request to.
type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

var (
	_ ports.SecurityMetrics     = (*Metrics)(nil)
	_ ports.OutboxMetrics       = (*Metrics)(nil)
	_ ports.PurgeMetrics        = (*Metrics)(nil)
	_ ports.ClaimsHookMetrics   = (*Metrics)(nil)
	_ ports.AccountCacheMetrics = (*Metrics)(nil)
)

// Outbox results, the values of userd_outbox_messages_total's result label.
const (
	OutboxDelivered = "delivered"
	OutboxRetried   = "retried"
	OutboxGivenUp   = "given_up"
)

// Results of a failed call to the per-IP limits' store, the values of
// userd_rate_limit_store_errors_total's result label.
const (
	LimitStoreFailedOpen   = "failed_open"
	LimitStoreFailedClosed = "failed_closed"
)

// requestBuckets are the latency buckets of userd_http_request_duration_seconds,
// in seconds: most requests take a few milliseconds, logins tens (argon2id),
// and the request timeout ends everything by 10 s.
var requestBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// New creates userd's collectors and registers them with reg. It fails
// when reg holds collectors of the same names already.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := newCollectors()
	m.hookCalls, m.hookDuration = newHookCollectors()
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.logins, m.reuse, m.refreshes, m.events, m.auditFailures, m.hashing, m.outbox, m.limitStore, m.purged,
		m.hookCalls, m.hookDuration, m.accountCache.lookups, m.accountCache.evictions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.startSeries()
	return m, nil
}

// newCollectors makes userd's collectors, unregistered.
func newCollectors() *Metrics {
	return &Metrics{
		accountCache: newAccountCacheCounters(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: requestBuckets,
		}, []string{"route", "method"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "logins_total",
			Help: "Password checks (logins, and the current password of updates), by result: success, failure, or throttled by the per-email lock-out.",
		}, []string{"result"}),
		reuse: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "refresh_reuse_detected_total",
			Help: "Used refresh tokens presented again outside the grace window; each revoked its session.",
		}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "refresh_total",
			Help: "Refresh requests, by result: success, grace (repeat within the grace window), invalid, reuse, error.",
		}, []string{"result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "security_events_total",
			Help: "Security events of the audit trail, by type, counted whether or not the audit write succeeded.",
		}, []string{"type"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "audit_write_failures_total",
			Help: "Security events that could not be written to the audit trail (each is also logged as an error).",
		}),
		hashing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "password_hashing_total",
			Help: "Password hashing calls, by operation (hash: registration, password change, rehash; verify: login, current password, the dummy check of unknown emails) and result: done (computed), busy (no free slot in time), error (unreadable hash).",
		}, []string{"op", "result"}),
		outbox: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "outbox_messages_total",
			Help: "What the sender did with outbox messages, by kind (mail; mail_request: a request for a link) and result: delivered (sent, or a request answered), retried (a failed attempt to be tried again), given_up (refused for good by the mail server, or 24 h old).",
		}, []string{"kind", "result"}),
		limitStore: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "rate_limit_store_errors_total",
			Help: "Requests whose per-IP limits could not be checked because their store (Redis) failed or did not answer in time, by result: failed_open (admitted, USERD_RATE_LIMIT_FAIL=open) or failed_closed (refused with 503).",
		}, []string{"result"}),
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "purged_rows_total",
			Help: "Rows deleted by the housekeeping (by this node), by kind: refresh_families (with their tokens), link_tokens, mfa_challenges, passkey_ceremonies, oauth_auth_requests, login_attempts, outbox_messages, audit_events.",
		}, []string{"kind"}),
	}
}

// startSeries makes every series of a fixed label set exist from the
// start, at zero, so that rate() and alerts see the first event rather
// than a new series.
func (m *Metrics) startSeries() {
	for _, r := range []string{LoginSuccess, LoginFailure, LoginThrottled} {
		m.logins.WithLabelValues(r)
	}
	for _, o := range []ports.RefreshOutcome{ports.RefreshSucceeded, ports.RefreshGraceRepeat, ports.RefreshInvalid, ports.RefreshReused, ports.RefreshError} {
		m.refreshes.WithLabelValues(string(o))
	}
	for _, t := range domain.AuditEventTypes {
		m.events.WithLabelValues(string(t))
	}
	for _, k := range []domain.OutboxKind{domain.OutboxMail, domain.OutboxMailRequest, domain.OutboxWebhook} {
		for _, r := range []string{OutboxDelivered, OutboxRetried, OutboxGivenUp} {
			m.outbox.WithLabelValues(string(k), r)
		}
	}
	for _, r := range []string{LimitStoreFailedOpen, LimitStoreFailedClosed} {
		m.limitStore.WithLabelValues(r)
	}
	for _, k := range domain.PurgeKinds {
		m.purged.WithLabelValues(string(k))
	}
	for _, r := range hookResults {
		m.hookCalls.WithLabelValues(r)
	}
	for _, op := range []string{HashOpHash, HashOpVerify} {
		for _, r := range []string{HashDone, HashBusy, HashError} {
			m.hashing.WithLabelValues(op, r)
		}
	}
}

// ObserveRequest counts one answered request and its latency. It
// implements httpapi.RequestObserver.
func (m *Metrics) ObserveRequest(route, method string, status int, elapsed time.Duration) {
	if route == "" {
		route = UnmatchedRoute
	}
	if status < 100 || status > 599 {
		status = 0 // statusLabel's "other"
	}
	key := requestKey{route, normalizeMethod(method), status}
	s, ok := m.series.Load(key)
	if !ok {
		s, _ = m.series.LoadOrStore(key, &requestSeries{
			count:    m.requests.WithLabelValues(key.route, key.method, statusLabel(status)),
			duration: m.duration.WithLabelValues(key.route, key.method),
		})
	}
	rs := s.(*requestSeries)
	rs.count.Inc()
	rs.duration.Observe(elapsed.Seconds())
}

// normalizeMethod keeps the standard methods and folds anything else (a
// client may send any token) into "other".
func normalizeMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

func statusLabel(s int) string {
	if s < 100 || s > 599 {
		return "other"
	}
	return strconv.Itoa(s)
}

// SecurityEvent implements ports.SecurityMetrics.
func (m *Metrics) SecurityEvent(t domain.AuditEventType) {
	m.events.WithLabelValues(string(t)).Inc()
	switch t {
	case domain.AuditLoginSucceeded:
		m.logins.WithLabelValues(LoginSuccess).Inc()
	case domain.AuditLoginFailed:
		m.logins.WithLabelValues(LoginFailure).Inc()
	case domain.AuditLoginThrottled:
		m.logins.WithLabelValues(LoginThrottled).Inc()
	case domain.AuditRefreshReuseDetected:
		m.reuse.Inc()
	}
}

// Refresh implements ports.SecurityMetrics.
func (m *Metrics) Refresh(o ports.RefreshOutcome) {
	m.refreshes.WithLabelValues(string(o)).Inc()
}

// Delivered implements ports.OutboxMetrics.
func (m *Metrics) Delivered(kind domain.OutboxKind) {
	m.outbox.WithLabelValues(outboxKindLabel(kind), OutboxDelivered).Inc()
}

// Retried implements ports.OutboxMetrics.
func (m *Metrics) Retried(kind domain.OutboxKind) {
	m.outbox.WithLabelValues(outboxKindLabel(kind), OutboxRetried).Inc()
}

// GivenUp implements ports.OutboxMetrics.
func (m *Metrics) GivenUp(kind domain.OutboxKind) {
	m.outbox.WithLabelValues(outboxKindLabel(kind), OutboxGivenUp).Inc()
}

// outboxKindLabel bounds the kind label to the known kinds.
func outboxKindLabel(k domain.OutboxKind) string {
	switch k {
	case domain.OutboxMail, domain.OutboxMailRequest, domain.OutboxWebhook:
		return string(k)
	}
	return "other"
}

// Purged implements ports.PurgeMetrics. A kind this version does not
// know is counted as "other".
func (m *Metrics) Purged(kind domain.PurgeKind, n int) {
	label := "other"
	for _, k := range domain.PurgeKinds {
		if k == kind {
			label = string(k)
		}
	}
	m.purged.WithLabelValues(label).Add(float64(n))
}

// AuditWriteFailed implements ports.SecurityMetrics.
func (m *Metrics) AuditWriteFailed() { m.auditFailures.Inc() }

// NewRegistry returns a registry holding the Go runtime and process
// collectors, for New and the pool collector to join.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// Handler serves the metrics of g in the Prometheus text format, or in
// OpenMetrics to a scraper that asks for it.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// ObserveRateLimitStoreError counts a request whose per-IP limits'
// store failed, admitted (failedOpen) or refused
// (httpapi.RateLimitStoreObserver).
func (m *Metrics) ObserveRateLimitStoreError(failedOpen bool) {
	r := LimitStoreFailedClosed
	if failedOpen {
		r = LimitStoreFailedOpen
	}
	m.limitStore.WithLabelValues(r).Inc()
}
