package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/userd/userd/ports"
)

// hookResults are the values of userd_claims_hook_calls_total's result
// label.
var hookResults = []string{ports.HookClaimsAnswered, ports.HookRefused, ports.HookFailed, ports.HookUnavailable}

// hookBuckets are the buckets of userd_claims_hook_duration_seconds: a
// hook beside userd answers in a millisecond or two, one across a network
// in tens, and the timeout (2 s by default, 30 s at most) ends the rest.
var hookBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func newHookCollectors() (*prometheus.CounterVec, prometheus.Histogram) {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "claims_hook_calls_total",
			Help: "Calls of the claims hook (USERD_CLAIMS_HOOK_URL), by result: claims (answered 200 with claims), refused (403), failed (a 200 that is not an answer: 502 hook_failed), unavailable (a timeout or another status).",
		}, []string{"result"}),
		prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "claims_hook_duration_seconds",
			Help:    "Time a call of the claims hook took, whatever its result.",
			Buckets: hookBuckets,
		})
}

// HookCalled implements ports.ClaimsHookMetrics. A result this version
// does not know is counted as "other".
func (m *Metrics) HookCalled(result string, took time.Duration) {
	label := "other"
	for _, r := range hookResults {
		if r == result {
			label = r
		}
	}
	m.hookCalls.WithLabelValues(label).Inc()
	m.hookDuration.Observe(took.Seconds())
}
