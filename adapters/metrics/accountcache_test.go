package metrics_test

import "testing"

func TestAccountCache_counts_lookups_and_evictions(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	for range 3 {
		m.AccountCacheHit()
	}
	m.AccountCacheMiss()
	m.AccountCacheEviction()
	m.AccountCacheEviction()
	for _, c := range []struct {
		name  string
		label []string
		want  float64
	}{
		{"userd_account_cache_lookups_total", []string{"result", "hit"}, 3},
		{"userd_account_cache_lookups_total", []string{"result", "miss"}, 1},
		{"userd_account_cache_evictions_total", nil, 2},
	} {
		if got := value(t, reg, c.name, c.label...); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.label, got, c.want)
		}
	}
}
