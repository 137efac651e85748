package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestOverload (case 4) finds the concurrency the service sustains for
// reads, then drives ten times that (at least 160, at most 320 clients
// without pause, 80% reads and 20% logins with the default argon2id
// parameters) for 20 s against USERD_MAX_INFLIGHT=64. The service must
// shed with 429/503 rather than queue without bound: no request times
// out, admitted requests keep a bounded latency, the resident memory
// stays bounded, and a normal request is served promptly once the load
// drops.
func TestOverload(t *testing.T) {
	requireFaults(t)
	const (
		maxInflight   = 64
		duration      = 20 * time.Second
		clientTimeout = 15 * time.Second
		rssLimitMiB   = 300
		readP99Limit  = 2 * time.Second
		// A login waits at most 5 s for a hashing slot, then hashes.
		loginP99Limit = 6 * time.Second
		shedP99Limit  = time.Second
		recoveryLimit = 500 * time.Millisecond
		loginUsers    = 16
		maxPerClient  = 20000
	)
	path := filepath.Join(t.TempDir(), "userd.db")
	srv := newServer(t, "userd", map[string]string{
		"USERD_DB_DRIVER":    "sqlite",
		"USERD_DB_DSN":       path,
		"USERD_MAX_INFLIGHT": fmt.Sprint(maxInflight),
		// The default (production) hashing cost: logins are the expensive path.
		"USERD_ARGON2_MEMORY_KIB": "19456",
		"USERD_ARGON2_ITERATIONS": "2",
	})
	srv.start()
	setup := newAPI(srv.base, 8, 30*time.Second)
	defer setup.close()
	setup.adminLogin(t)
	run := runID()
	emails := make([]string, loginUsers)
	access := make([]string, loginUsers)
	for i := range emails {
		emails[i] = fmt.Sprintf("load-%s-%d@example.com", run, i)
		setup.mustCreate(t, emails[i])
		access[i] = setup.mustLogin(t, emails[i], userPassword).AccessToken
	}
	pid := srv.pid()
	baseRSS := procStatus(pid)["VmRSS"]

	// Calibration: read throughput at rising concurrency, 500 ms each.
	var knee int
	var calib []string
	{
		best := 0.0
		tput := map[int]float64{}
		levels := []int{1, 2, 4, 8, 16, 32}
		for _, c := range levels {
			a := newAPI(srv.base, c, 10*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			var mu sync.Mutex
			n := 0
			runWorkers(ctx, c, 100000, 0, func(ctx context.Context, w, _ int) bool {
				r := a.do(ctx, http.MethodGet, "/api/users/me", nil, access[w%loginUsers])
				if r.status == http.StatusOK {
					mu.Lock()
					n++
					mu.Unlock()
				}
				return true
			})
			cancel()
			a.close()
			tput[c] = float64(n) / 0.5
			best = max(best, tput[c])
			calib = append(calib, fmt.Sprintf("%d→%.0f/s", c, tput[c]))
		}
		for _, c := range levels {
			if tput[c] >= 0.9*best {
				knee = c
				break
			}
		}
	}
	clients := min(max(10*knee, 160), 320)

	// The flood.
	st, shedSt := newStats(), newStats()
	var peakRSS, peakFDs int64
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss := procStatus(pid)["VmRSS"]; rss > peakRSS {
				peakRSS = rss
			}
			if fds := int64(openFDs(pid)); fds > peakFDs {
				peakFDs = fds
			}
			select {
			case <-stopSampler:
				return
			case <-tick.C:
			}
		}
	}()
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
	}
	flood := &api{base: srv.base, client: &http.Client{Timeout: clientTimeout, Transport: tr}}
	var problems []string
	var pmu sync.Mutex
	problem := func(format string, args ...any) {
		pmu.Lock()
		defer pmu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	floodStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	runWorkers(ctx, clients, maxPerClient, 0, func(ctx context.Context, w, i int) bool {
		u := (w + i) % loginUsers
		var r result
		op := "read"
		// The last second is logins only, so that the hashing queue is
		// full when every client leaves at once.
		if (w+i)%5 == 0 || time.Since(floodStart) > duration-time.Second {
			op = "login"
			r = flood.login(ctx, emails[u], userPassword)
		} else {
			r = flood.do(ctx, http.MethodGet, "/api/users/me", nil, access[u])
		}
		if ctx.Err() != nil && r.err != nil {
			return false // the end of the run, not an answer
		}
		st.add(op, r)
		switch {
		case r.err != nil:
			problem("%s: transport error: %s", op, r)
		case r.ok():
		case r.status == http.StatusServiceUnavailable:
			shedSt.add(op, r)
			if msg := checkProblem(r, "unavailable"); msg != "" {
				problem("%s: %s: %s", op, msg, r)
			}
		case r.status == http.StatusTooManyRequests:
			shedSt.add(op, r)
			if msg := checkProblem(r, ""); msg != "" {
				problem("%s: %s: %s", op, msg, r)
			}
		default:
			problem("%s: unexpected answer %s", op, r)
		}
		return true
	})
	cancel()
	floodEnd := time.Now()
	tr.CloseIdleConnections()

	// Load dropped: a normal client is served at once. The logins the
	// clients abandoned must not hold it up: their hashing is no use to
	// anyone once the client has gone.
	after := newAPI(srv.base, 1, 10*time.Second)
	defer after.close()
	readAfter := after.do(context.Background(), http.MethodGet, "/api/users/me", nil, access[0])
	loginAfter := after.login(context.Background(), emails[1], userPassword)
	// A second login shows whether the first waited for leftover work.
	loginAgain := after.login(context.Background(), emails[2], userPassword)
	close(stopSampler)
	<-samplerDone
	endRSS := procStatus(pid)["VmRSS"]

	reads, logins := st.get("read"), st.get("login")
	total := st.total()
	shed := total.statuses[http.StatusServiceUnavailable] + total.statuses[http.StatusTooManyRequests]
	shedAll := shedSt.total()
	elapsed := floodEnd.Sub(floodStart)

	t.Logf("did: calibration of reads (concurrency→throughput, 500 ms each): %v; knee %d; "+
		"then %d clients without pause (80%% GET /api/users/me, 20%% login, argon2id m=19456 t=2; the last second logins only) "+
		"for %s against USERD_MAX_INFLIGHT=%d, then all clients gone at once",
		calib, knee, clients, elapsed.Round(time.Millisecond), maxInflight)
	t.Logf("requests:\n%s", st)
	t.Logf("total sent %d in %s (%.0f/s): admitted 2xx %d, shed %d (503 %d, 429 %d), transport errors %d",
		total.sent, elapsed.Round(time.Millisecond), float64(total.sent)/elapsed.Seconds(), total.count2xx(), shed,
		total.statuses[http.StatusServiceUnavailable], total.statuses[http.StatusTooManyRequests], total.errorCount())
	t.Logf("admitted latency p99: reads %s (limit %s), logins %s (limit %s); slowest answer of all %s (client timeout %s)",
		ms(percentile(reads.ok, 99)), readP99Limit, ms(percentile(logins.ok, 99)), loginP99Limit,
		ms(percentile(total.all, 100)), clientTimeout)
	t.Logf("shed answers: p50 %s, p99 %s (limit %s), max %s",
		ms(percentile(shedAll.all, 50)), ms(percentile(shedAll.all, 99)), shedP99Limit, ms(percentile(shedAll.all, 100)))
	t.Logf("server memory: VmRSS %d MiB before, peak %d MiB during (limit %d MiB), %d MiB after; peak open fds %d",
		baseRSS>>10, peakRSS>>10, rssLimitMiB, endRSS>>10, peakFDs)
	t.Logf("after the load (all clients gone): GET /api/users/me %d in %s; login %d in %s, then another login %d in %s (limit %s)",
		readAfter.status, ms(readAfter.latency()), loginAfter.status, ms(loginAfter.latency()),
		loginAgain.status, ms(loginAgain.latency()), recoveryLimit)
	reportLogs(t, srv)

	for _, p := range problems {
		t.Error(p)
	}
	if shed == 0 {
		t.Errorf("nothing was shed at %d clients: the case did not overload the service", clients)
	}
	if total.count2xx() == 0 {
		t.Errorf("nothing was admitted")
	}
	if p := percentile(reads.ok, 99); p > readP99Limit {
		t.Errorf("admitted reads p99 %s, over %s", p, readP99Limit)
	}
	if p := percentile(logins.ok, 99); p > loginP99Limit {
		t.Errorf("admitted logins p99 %s, over %s", p, loginP99Limit)
	}
	if peakRSS>>10 > rssLimitMiB {
		t.Errorf("peak VmRSS %d MiB, over %d MiB", peakRSS>>10, rssLimitMiB)
	}
	if readAfter.status != http.StatusOK || readAfter.latency() > recoveryLimit {
		t.Errorf("read after the load: %s, want 200 within %s", readAfter, recoveryLimit)
	}
	for _, r := range []result{loginAfter, loginAgain} {
		if r.status != http.StatusOK || r.latency() > recoveryLimit {
			t.Errorf("login after the load: %d after %s, want 200 within %s", r.status, ms(r.latency()), recoveryLimit)
		}
	}
	if p := percentile(shedAll.all, 99); p > shedP99Limit {
		t.Errorf("shed answers p99 %s, over %s: shedding is not fast", p, shedP99Limit)
	}
}
