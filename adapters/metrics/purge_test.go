package metrics_test

import (
	"testing"

	"github.com/userd/userd/domain"
)

func TestPurgeMetrics_count_rows_by_kind(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.Purged(domain.PurgeRefreshFamilies, 2000)
	m.Purged(domain.PurgeRefreshFamilies, 17)
	m.Purged(domain.PurgeAuditEvents, 3)
	m.Purged("users", 1)
	for _, c := range []struct {
		kind string
		want float64
	}{
		{"refresh_families", 2017}, {"audit_events", 3}, {"link_tokens", 0}, {"other", 1},
	} {
		if got := value(t, reg, "userd_purged_rows_total", "kind", c.kind); got != c.want {
			t.Errorf("%s = %v, want %v", c.kind, got, c.want)
		}
	}
}
