package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BacklogSource reports what waits in the outbox, such as ports.Outbox.
type BacklogSource interface {
	Backlog(ctx context.Context) (int, time.Time, error)
}

// backlogTimeout bounds the query a scrape makes: a slow database must
// not hold the scrape (and the other metrics) past Prometheus's timeout.
const backlogTimeout = 2 * time.Second

// backlogCollector reads the outbox backlog at each scrape, from the
// database that every node shares, so any node's /metrics tells the
// truth about all of them.
type backlogCollector struct {
	src    BacklogSource
	now    func() time.Time
	count  *prometheus.Desc
	oldest *prometheus.Desc
	failed *prometheus.Desc
}

// NewOutboxBacklogCollector returns a collector of the outbox backlog:
// userd_outbox_backlog (messages waiting, claimed or not) and
// userd_outbox_oldest_age_seconds (0 when none wait). When the store does
// not answer, userd_outbox_backlog_query_failed is 1 and the other two are
// left out rather than reported as zero. now is the clock; nil means
// time.Now.
func NewOutboxBacklogCollector(src BacklogSource, now func() time.Time) prometheus.Collector {
	if now == nil {
		now = time.Now
	}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "outbox", name), help, nil, nil)
	}
	return &backlogCollector{
		src:    src,
		now:    now,
		count:  d("backlog", "Messages waiting in the outbox (mail not sent yet, requests not answered yet), on all nodes."),
		oldest: d("oldest_age_seconds", "Age of the oldest message waiting in the outbox; 0 when none waits."),
		failed: d("backlog_query_failed", "1 when the last scrape could not read the outbox backlog from the store."),
	}
}

// Describe implements prometheus.Collector.
func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
	ch <- c.failed
}

// Collect implements prometheus.Collector.
func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	n, oldest, err := c.src.Backlog(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, 0)
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n))
	age := 0.0
	if n > 0 && !oldest.IsZero() {
		age = max(c.now().Sub(oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age)
}
