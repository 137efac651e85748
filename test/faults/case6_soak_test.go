package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var soakDurationFlag = flag.Duration("soak.duration", 0, "length of TestSoak (default USERD_SOAK_DURATION, else 10m)")

// soakDuration is -soak.duration, else USERD_SOAK_DURATION, else 10 min.
func soakDuration(t *testing.T) time.Duration {
	if *soakDurationFlag > 0 {
		return *soakDurationFlag
	}
	if v := os.Getenv("USERD_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("USERD_SOAK_DURATION=%q: want a positive Go duration such as 1m", v)
		}
		return d
	}
	return 10 * time.Minute
}

// sample is the server's vital signs at one moment. Go runtime figures
// come from /metrics when it serves them (-1 otherwise); the others from
// /proc.
type sample struct {
	at                    time.Duration
	goroutines, fds       int64
	heapInuse, rss        int64 // bytes
	threads, procFDs      int64
	requests, errorsSoFar int
}

// TestSoak (case 6, not in CI) runs the mixed load (80% reads, 10%
// refresh, 5% login, 5% create) for 10 minutes or USERD_SOAK_DURATION,
// sampling goroutines, open files and heap every 10 s: after the
// warm-up, none may grow beyond a bound, and no request may fail.
func TestSoak(t *testing.T) {
	if !soakEnabled {
		t.Skip("USERD_SOAK=1 not set: soak skipped (run `make soak`, or `make soak SOAK_DURATION=1m`)")
	}
	duration := soakDuration(t)
	const (
		workers        = 8
		pace           = 10 * time.Millisecond
		goroutineSlack = 50
		fdSlack        = 50
		heapSlack      = 32 << 20
		rssSlack       = 100 << 20
	)
	interval := min(10*time.Second, duration/6)
	path := filepath.Join(t.TempDir(), "userd.db")
	srv := newServer(t, "userd", map[string]string{"USERD_DB_DRIVER": "sqlite", "USERD_DB_DSN": path})
	srv.start()
	a := newAPI(srv.base, workers, 10*time.Second)
	defer a.close()
	a.adminLogin(t)
	run := runID()

	type session struct {
		email string
		tk    tokens
	}
	sessions := make([]*session, workers)
	for w := range sessions {
		email := fmt.Sprintf("soak-%s-%d@example.com", run, w)
		a.mustCreate(t, email)
		sessions[w] = &session{email: email, tk: a.mustLogin(t, email, userPassword)}
	}
	pid := srv.pid()
	metricsClient := &http.Client{Timeout: 5 * time.Second}
	takeSample := func(at time.Duration, requests, errs int) sample {
		s := sample{at: at, goroutines: -1, fds: -1, heapInuse: -1, requests: requests, errorsSoFar: errs}
		if res, err := metricsClient.Get(srv.base + "/metrics"); err == nil {
			if res.StatusCode == http.StatusOK {
				m := parseMetrics(res)
				s.goroutines, s.fds, s.heapInuse = m["go_goroutines"], m["process_open_fds"], m["go_memstats_heap_inuse_bytes"]
			}
			_ = res.Body.Close()
		}
		st := procStatus(pid)
		s.rss, s.threads, s.procFDs = st["VmRSS"]<<10, st["Threads"], int64(openFDs(pid))
		return s
	}

	st := newStats()
	var errMu sync.Mutex
	var errs []string
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var samples []sample
	sampled := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		samples = append(samples, takeSample(0, 0, 0))
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				tot := st.total()
				samples = append(samples, takeSample(time.Since(began), tot.sent, tot.sent-tot.count2xx()))
			}
		}
	}()
	maxPerWorker := int(duration/pace) + 1
	runWorkers(ctx, workers, maxPerWorker, pace, func(ctx context.Context, w, i int) bool {
		s := sessions[w]
		var op string
		var r result
		switch k := (i*7 + w) % 20; {
		case k < 16:
			op = "read"
			if k%2 == 0 {
				r = a.do(ctx, http.MethodGet, "/api/users/me", nil, s.tk.AccessToken)
			} else {
				r = a.getUser(ctx, s.tk.User.ID, s.tk.AccessToken)
			}
		case k < 18:
			op = "refresh"
			r = a.refresh(ctx, s.tk.RefreshToken)
		case k < 19:
			op = "login"
			r = a.login(ctx, s.email, userPassword)
		default:
			op = "create"
			r = a.createUser(ctx, fmt.Sprintf("soak-%s-%d-%d@example.com", run, w, i))
		}
		if ctx.Err() != nil && r.err != nil {
			return false // the end of the soak, not an answer
		}
		st.add(op, r)
		if !r.ok() {
			errMu.Lock()
			if len(errs) < 20 {
				errs = append(errs, fmt.Sprintf("%s at +%s: %s", op, time.Since(began).Round(time.Second), r))
			}
			errMu.Unlock()
			return true
		}
		if op == "refresh" || op == "login" {
			var tk tokens
			if err := json.Unmarshal(r.body, &tk); err == nil && tk.RefreshToken != "" {
				s.tk = tk
			}
		}
		return true
	})
	cancel()
	<-sampled
	tot := st.total()
	if time.Since(began)-samples[len(samples)-1].at > time.Second {
		samples = append(samples, takeSample(time.Since(began), tot.sent, tot.sent-tot.count2xx()))
	}

	source := "/metrics"
	if samples[len(samples)-1].goroutines < 0 {
		source = "/proc only (no /metrics)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "    %8s %10s %8s %10s %11s %9s %8s %9s %7s\n", "at", "goroutines", "fds", "heap MiB", "VmRSS MiB", "threads", "/proc fd", "requests", "errors")
	for _, s := range samples {
		fmt.Fprintf(&b, "    %8s %10d %8d %10.1f %11.1f %9d %8d %9d %7d\n", s.at.Round(time.Second), s.goroutines, s.fds,
			float64(s.heapInuse)/(1<<20), float64(s.rss)/(1<<20), s.threads, s.procFDs, s.requests, s.errorsSoFar)
	}
	t.Logf("did: %s of mixed load (80%% reads, 10%% refresh, 5%% login, 5%% create), %d workers pausing %s, on SQLite; sampled every %s from %s:\n%s",
		duration, workers, pace, interval, source, b.String())
	t.Logf("requests:\n%s", st)
	t.Logf("total: %d sent, %d × 2xx, %d errors (%.0f/s)", tot.sent, tot.count2xx(), tot.sent-tot.count2xx(),
		float64(tot.sent)/time.Since(began).Seconds())

	// The baseline is the first sample after the warm-up (the first
	// interval); every later one must stay within the slack of it.
	if len(samples) < 3 {
		t.Fatalf("only %d samples: the soak is too short to judge growth", len(samples))
	}
	base := samples[1]
	var peak sample
	for _, s := range samples[1:] {
		peak.goroutines = max(peak.goroutines, s.goroutines)
		peak.fds = max(peak.fds, s.fds)
		peak.heapInuse = max(peak.heapInuse, s.heapInuse)
		peak.rss = max(peak.rss, s.rss)
		peak.procFDs = max(peak.procFDs, s.procFDs)
	}
	type bound struct {
		name            string
		base, peak, lim int64
	}
	bounds := []bound{
		{"open fds (/proc)", base.procFDs, peak.procFDs, base.procFDs + fdSlack},
		{"VmRSS bytes", base.rss, peak.rss, base.rss + rssSlack},
	}
	if base.goroutines >= 0 {
		bounds = append(bounds,
			bound{"go_goroutines", base.goroutines, peak.goroutines, base.goroutines + goroutineSlack},
			bound{"process_open_fds", base.fds, peak.fds, base.fds + fdSlack},
			bound{"go_memstats_heap_inuse_bytes", base.heapInuse, peak.heapInuse, 2*base.heapInuse + heapSlack})
	}
	for _, bd := range bounds {
		verdict := "ok"
		if bd.peak > bd.lim {
			verdict = "GROWTH"
			t.Errorf("%s grew from %d to %d, over the bound %d", bd.name, bd.base, bd.peak, bd.lim)
		}
		t.Logf("%-30s after warm-up %12d, peak %12d, bound %12d: %s", bd.name, bd.base, bd.peak, bd.lim, verdict)
	}
	reportLogs(t, srv)
	for _, e := range errs {
		t.Error(e)
	}
	srv.stop()
}

// parseMetrics reads the unlabelled samples of a Prometheus text page.
func parseMetrics(res *http.Response) map[string]int64 {
	out := map[string]int64{}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(strings.Fields(value)[0], 64); err == nil {
			out[name] = int64(f)
		}
	}
	return out
}
