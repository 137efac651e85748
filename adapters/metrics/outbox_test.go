package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/domain"
)

func TestOutboxMetrics_count_by_kind_and_result(t *testing.T) {
	t.Parallel()
	m, reg := newMetrics(t)
	m.Delivered(domain.OutboxMail)
	m.Delivered(domain.OutboxMail)
	m.Retried(domain.OutboxMail)
	m.GivenUp(domain.OutboxMail)
	m.Delivered(domain.OutboxMailRequest)
	m.Delivered("webhook-from-the-future")
	for _, c := range []struct {
		kind, result string
		want         float64
	}{
		{"mail", metrics.OutboxDelivered, 2}, {"mail", metrics.OutboxRetried, 1}, {"mail", metrics.OutboxGivenUp, 1},
		{"mail_request", metrics.OutboxDelivered, 1}, {"mail_request", metrics.OutboxGivenUp, 0},
		{"other", metrics.OutboxDelivered, 1},
	} {
		if got := value(t, reg, "userd_outbox_messages_total", "kind", c.kind, "result", c.result); got != c.want {
			t.Errorf("%s/%s = %v, want %v", c.kind, c.result, got, c.want)
		}
	}
}

type fakeBacklog struct {
	n      int
	oldest time.Time
	err    error
}

func (f fakeBacklog) Backlog(context.Context) (int, time.Time, error) { return f.n, f.oldest, f.err }

func TestOutboxBacklogCollector(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, c := range []struct {
		name string
		src  fakeBacklog
		want string
	}{
		{"waiting", fakeBacklog{n: 3, oldest: now.Add(-90 * time.Second)}, `
# HELP userd_outbox_backlog Messages waiting in the outbox (mail not sent yet, requests not answered yet), on all nodes.
# TYPE userd_outbox_backlog gauge
userd_outbox_backlog 3
# HELP userd_outbox_backlog_query_failed 1 when the last scrape could not read the outbox backlog from the store.
# TYPE userd_outbox_backlog_query_failed gauge
userd_outbox_backlog_query_failed 0
# HELP userd_outbox_oldest_age_seconds Age of the oldest message waiting in the outbox; 0 when none waits.
# TYPE userd_outbox_oldest_age_seconds gauge
userd_outbox_oldest_age_seconds 90
`},
		{"empty", fakeBacklog{}, `
# HELP userd_outbox_backlog Messages waiting in the outbox (mail not sent yet, requests not answered yet), on all nodes.
# TYPE userd_outbox_backlog gauge
userd_outbox_backlog 0
# HELP userd_outbox_backlog_query_failed 1 when the last scrape could not read the outbox backlog from the store.
# TYPE userd_outbox_backlog_query_failed gauge
userd_outbox_backlog_query_failed 0
# HELP userd_outbox_oldest_age_seconds Age of the oldest message waiting in the outbox; 0 when none waits.
# TYPE userd_outbox_oldest_age_seconds gauge
userd_outbox_oldest_age_seconds 0
`},
		{"store down", fakeBacklog{err: errors.New("down")}, `
# HELP userd_outbox_backlog_query_failed 1 when the last scrape could not read the outbox backlog from the store.
# TYPE userd_outbox_backlog_query_failed gauge
userd_outbox_backlog_query_failed 1
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			col := metrics.NewOutboxBacklogCollector(c.src, clock)
			reg.MustRegister(col)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(c.want)); err != nil {
				t.Error(err)
			}
			if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %v", problems, err)
			}
		})
	}
}
