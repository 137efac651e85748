package metrics

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// StatsSource is a connection pool that reports its statistics, such as
// *gormstore.DB or *sql.DB.
type StatsSource interface {
	Stats() sql.DBStats
}

// dbStatsCollector reads the pool's statistics at each scrape, so the
// values are never stale and nothing runs between scrapes.
type dbStatsCollector struct {
	src StatsSource

	maxOpen, open, inUse, idle       *prometheus.Desc
	waitCount, waitDuration          *prometheus.Desc
	maxIdleClosed, maxLifetimeClosed *prometheus.Desc
}

// NewDBStatsCollector returns a collector of the database pool's
// statistics (database/sql DBStats) as userd_db_* metrics.
func NewDBStatsCollector(src StatsSource) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "db", name), help, nil, nil)
	}
	return &dbStatsCollector{
		src:               src,
		maxOpen:           d("max_open_connections", "Maximum number of open connections to the database."),
		open:              d("open_connections", "Established connections, in use or idle."),
		inUse:             d("in_use_connections", "Connections currently in use."),
		idle:              d("idle_connections", "Idle connections."),
		waitCount:         d("wait_count_total", "Times a request waited for a free connection."),
		waitDuration:      d("wait_duration_seconds_total", "Total time spent waiting for a free connection."),
		maxIdleClosed:     d("max_idle_closed_total", "Connections closed because the idle pool was full."),
		maxLifetimeClosed: d("max_lifetime_closed_total", "Connections closed because they reached their maximum lifetime."),
	}
}

// Describe implements prometheus.Collector.
func (c *dbStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.maxOpen, c.open, c.inUse, c.idle, c.waitCount, c.waitDuration, c.maxIdleClosed, c.maxLifetimeClosed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *dbStatsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	ch <- prometheus.MustNewConstMetric(c.maxOpen, prometheus.GaugeValue, float64(s.MaxOpenConnections))
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.OpenConnections))
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(s.InUse))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(c.waitCount, prometheus.CounterValue, float64(s.WaitCount))
	ch <- prometheus.MustNewConstMetric(c.waitDuration, prometheus.CounterValue, s.WaitDuration.Seconds())
	ch <- prometheus.MustNewConstMetric(c.maxIdleClosed, prometheus.CounterValue, float64(s.MaxIdleClosed))
	ch <- prometheus.MustNewConstMetric(c.maxLifetimeClosed, prometheus.CounterValue, float64(s.MaxLifetimeClosed))
}
