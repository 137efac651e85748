package metrics

import "github.com/prometheus/client_golang/prometheus"

// Results of a signed-in request's account lookup, the values of
// userd_account_cache_lookups_total's result label.
const (
	AccountCacheHit  = "hit"
	AccountCacheMiss = "miss"
)

// accountCacheCounters count what the account cache does; hit and miss
// are lookups' series resolved once, since every signed-in request counts
// one of them.
type accountCacheCounters struct {
	lookups   *prometheus.CounterVec
	evictions prometheus.Counter
	hit, miss prometheus.Counter
}

func newAccountCacheCounters() accountCacheCounters {
	c := accountCacheCounters{
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "account_cache_lookups_total",
			Help: "Signed-in requests' reads of their account on this node, by result: hit (served by the account cache) or miss (read from the database; also every read while the cache is off or its channel down).",
		}, []string{"result"}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "account_cache_evictions_total",
			Help: "Accounts evicted from this node's account cache to make room (USERD_ACCOUNT_CACHE_SIZE), not counting those dropped because they changed.",
		}),
	}
	c.hit, c.miss = c.lookups.WithLabelValues(AccountCacheHit), c.lookups.WithLabelValues(AccountCacheMiss)
	return c
}

// AccountCacheHit implements ports.AccountCacheMetrics.
func (m *Metrics) AccountCacheHit() { m.accountCache.hit.Inc() }

// AccountCacheMiss implements ports.AccountCacheMetrics.
func (m *Metrics) AccountCacheMiss() { m.accountCache.miss.Inc() }

// AccountCacheEviction implements ports.AccountCacheMetrics.
func (m *Metrics) AccountCacheEviction() { m.accountCache.evictions.Inc() }
