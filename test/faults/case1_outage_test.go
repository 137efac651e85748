package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDatabaseOutage (case 1) stops PostgreSQL for 10 s under a steady
// load of creates and reads and starts it again. During the outage every
// answer is a fast 503 problem+json with code unavailable and /readyz says
// 503; after the restart the service recovers by itself within 5 s; every
// create acknowledged with 201, before, during or after, is readable.
func TestDatabaseOutage(t *testing.T) {
	requireFaults(t)
	const (
		requestTimeout = 2 * time.Second
		margin         = time.Second
		outage         = 10 * time.Second
		recoveryLimit  = 5 * time.Second
		workers        = 4 // two create, two read
		pace           = 25 * time.Millisecond
		maxPerWorker   = 2000
	)
	began := time.Now()
	pg := newPGCluster(t)
	pg.createDB("userd")
	srv := newServer(t, "userd", map[string]string{
		"USERD_DB_DRIVER":       "postgres",
		"USERD_DB_DSN":          pg.dsn("userd"),
		"USERD_SECRET_KEY":      newSecretKey(),
		"USERD_REQUEST_TIMEOUT": requestTimeout.String(),
	})
	srv.start()
	a := newAPI(srv.base, 16, 10*time.Second)
	defer a.close()
	admin := a.adminLogin(t)
	run := runID()

	var (
		mu      sync.Mutex
		results []struct {
			op string
			r  result
		}
		created acked
		// ambiguous creates: no 201, maybe committed all the same.
		ambiguous []string
	)
	record := func(op string, r result) {
		mu.Lock()
		results = append(results, struct {
			op string
			r  result
		}{op, r})
		mu.Unlock()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		runWorkers(loadCtx, workers, maxPerWorker, pace, func(ctx context.Context, w, i int) bool {
			if w%2 == 0 {
				email := fmt.Sprintf("outage-%s-%d-%d@example.com", run, w, i)
				r := a.createUser(ctx, email)
				if ctx.Err() != nil {
					return false
				}
				record("create", r)
				if r.status == http.StatusCreated {
					var u user
					if json.Unmarshal(r.body, &u) == nil {
						created.add(u)
					}
				} else {
					mu.Lock()
					ambiguous = append(ambiguous, email)
					mu.Unlock()
				}
				return true
			}
			var r result
			if u, ok := created.pick(i * 7); ok {
				r = a.getUser(ctx, u.ID, admin.AccessToken)
			} else {
				r = a.do(ctx, http.MethodGet, "/api/users/me", nil, admin.AccessToken)
			}
			if ctx.Err() != nil {
				return false
			}
			record("read", r)
			return true
		})
	}()
	go func() {
		defer wg.Done()
		probe := newAPI(srv.base, 1, 10*time.Second)
		defer probe.close()
		runWorkers(loadCtx, 1, 1000, 200*time.Millisecond, func(ctx context.Context, _, _ int) bool {
			r := probe.do(ctx, http.MethodGet, "/readyz", nil, "")
			if ctx.Err() != nil {
				return false
			}
			record("readyz", r)
			return true
		})
	}()

	time.Sleep(3 * time.Second)
	stopBegin := time.Now()
	pg.stop("fast")
	stopDone := time.Now()
	time.Sleep(outage - time.Since(stopBegin))
	startBegin := time.Now()
	pg.start()
	startDone := time.Now()

	// Wait for the first 2xx of each kind sent after the restart, then
	// keep the load on for 3 s more.
	firstOK := map[string]time.Duration{}
	deadline := startDone.Add(15 * time.Second)
	for time.Now().Before(deadline) && len(firstOK) < 3 {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		for _, e := range results {
			if _, seen := firstOK[e.op]; !seen && e.r.ok() && !e.r.start.Before(startDone) {
				firstOK[e.op] = e.r.end.Sub(startDone)
			}
		}
		mu.Unlock()
	}
	// The load goes on until 3 s past the recovery limit, so that the
	// "after" phase is judged on plenty of requests.
	time.Sleep(time.Until(startDone.Add(recoveryLimit + 3*time.Second)))
	stopLoad()
	wg.Wait()
	loadEnd := time.Now()

	// Judge every exchange by when it happened.
	type phaseTally struct{ sent, ok, unavailable, other int }
	phases := map[string]*phaseTally{"before": {}, "outage": {}, "restart": {}, "after": {}}
	var problems []string
	fail := func(format string, args ...any) {
		if len(problems) < 30 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	st := newStats()
	var maxLatency time.Duration
	settled := startDone.Add(recoveryLimit)
	mu.Lock()
	all := results
	mu.Unlock()
	for _, e := range all {
		r := e.r
		st.add(e.op, r)
		maxLatency = max(maxLatency, r.latency())
		var phase string
		switch {
		case r.end.Before(stopBegin):
			phase = "before"
		case !r.start.Before(stopDone) && r.end.Before(startBegin):
			phase = "outage"
		case !r.start.Before(settled):
			phase = "after"
		default:
			phase = "restart"
		}
		p := phases[phase]
		p.sent++
		switch {
		case r.err != nil:
			p.other++
			fail("%s (%s): transport error: %s", e.op, phase, r)
			continue
		case r.ok():
			p.ok++
		case r.status == http.StatusServiceUnavailable:
			p.unavailable++
		default:
			p.other++
		}
		if r.latency() > requestTimeout+margin {
			fail("%s (%s) took %s, over the request timeout %s + %s: %s", e.op, phase, r.latency(), requestTimeout, margin, r)
		}
		if !r.ok() {
			if msg := checkProblem(r, "unavailable"); msg != "" || r.status != http.StatusServiceUnavailable {
				fail("%s (%s): %d, %s: %s", e.op, phase, r.status, msg, r)
			}
		}
		if (phase == "outage" && r.status != http.StatusServiceUnavailable) ||
			((phase == "before" || phase == "after") && !r.ok()) {
			fail("%s during phase %s answered %s", e.op, phase, r)
		}
	}

	// Every 201 must be readable now.
	acks := created.list()
	readOK, readFailures := verifyReadable(ctx, a, admin.AccessToken, acks)
	var byPhase [3]int
	for _, e := range all {
		if e.op == "create" && e.r.status == http.StatusCreated {
			switch {
			case e.r.end.Before(stopBegin):
				byPhase[0]++
			case e.r.start.Before(startBegin):
				byPhase[1]++
			default:
				byPhase[2]++
			}
		}
	}
	// Creates without a 201: committed or not, both are allowed; count them.
	committed := 0
	for _, email := range ambiguous {
		r := a.do(ctx, http.MethodGet, "/api/users?email="+url.QueryEscape(email), nil, admin.AccessToken)
		if r.status == http.StatusOK && strings.Contains(string(r.body), email) {
			committed++
		}
	}

	t.Logf("did: %d workers (2 create, 2 read, %s pause) and a /readyz probe every 200 ms on PostgreSQL; "+
		"PostgreSQL stopped (pg_ctl stop -m fast) at +%s, down %s (stop took %s), started at +%s (start took %s); load ended at +%s",
		workers, pace, stopBegin.Sub(began).Round(time.Millisecond), startBegin.Sub(stopDone).Round(time.Millisecond),
		stopDone.Sub(stopBegin).Round(time.Millisecond), startBegin.Sub(began).Round(time.Millisecond),
		startDone.Sub(startBegin).Round(time.Millisecond), loadEnd.Sub(began).Round(time.Millisecond))
	t.Logf("requests by operation:\n%s", st)
	for _, name := range []string{"before", "outage", "restart", "after"} {
		p := phases[name]
		t.Logf("phase %-7s sent %4d: 2xx %4d, 503 unavailable %4d, other %d", name, p.sent, p.ok, p.unavailable, p.other)
	}
	t.Logf("slowest answer %s (limit %s + %s)", maxLatency.Round(time.Millisecond), requestTimeout, margin)
	t.Logf("recovery after the restart (first 2xx sent after it): create %s, read %s, readyz %s (limit %s)",
		firstOK["create"], firstOK["read"], firstOK["readyz"], recoveryLimit)
	t.Logf("creates acknowledged: %d (before %d, during %d, after %d); verified readable afterwards: %d; lost: %d",
		len(acks), byPhase[0], byPhase[1], byPhase[2], readOK, len(acks)-readOK)
	t.Logf("creates not acknowledged (503): %d, of which committed anyway: %d (allowed either way)", len(ambiguous), committed)
	t.Logf("log: %d × \"request failed: store unavailable\", %d × \"readiness check failed\"",
		srv.logs.count("request failed: unavailable"), srv.logs.count("readiness check failed"))
	// A user created just as the database went away may lose its audit
	// event (written after the user, outside its transaction): reported
	// in the summary above, not a failure of this case.
	reportLogs(t, srv, "audit write failed")

	for _, p := range problems {
		t.Error(p)
	}
	if phases["outage"].sent == 0 || phases["outage"].unavailable == 0 {
		t.Errorf("no request was answered during the outage: the case tested nothing")
	}
	for _, op := range []string{"create", "read", "readyz"} {
		d, ok := firstOK[op]
		if !ok || d > recoveryLimit {
			t.Errorf("%s did not recover within %s of the restart (first 2xx: %v, seen %v)", op, recoveryLimit, d, ok)
		}
	}
	if len(acks)-readOK != 0 {
		t.Errorf("%d acknowledged creates are not readable: %s", len(acks)-readOK, strings.Join(readFailures, "\n"))
	}
	srv.stop()
}
