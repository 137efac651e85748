package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// scReadTraced is the read (GET /api/users/{own id}, as read) sent to a
// second userd on the same database with traces on and every request
// sampled (OTEL_TRACES_SAMPLER=always_on), exporting by OTLP over HTTP to
// a receiver in the loader that reads and drops each export. Beside read,
// in the same run, it prices the traces (issue 30: at least 0.9 × the
// read with traces off). The first userd always runs with traces off:
// the loader strips OTEL_* from its environment.
const scReadTraced = "read-traced"

// tracedServer is the traced twin of a backend's userd.
type tracedServer struct {
	host     string
	pid      int
	receiver *dropReceiver
	stop     func()
}

// dropReceiver accepts OTLP/HTTP exports at POST /v1/traces, reads them
// whole and answers an empty ExportTraceServiceResponse (an empty
// protobuf message is zero bytes), counting what it dropped.
type dropReceiver struct {
	srv             *http.Server
	url             string
	exports, octets atomic.Int64
}

func startDropReceiver() (*dropReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &dropReceiver{url: "http://" + ln.Addr().String()}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		n, _ := io.Copy(io.Discard, req.Body)
		r.exports.Add(1)
		r.octets.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = r.srv.Serve(ln) }() // ends with Close
	return r, nil
}

func (r *dropReceiver) close() { _ = r.srv.Close() }

// tracedEnv are the variables that turn the twin's traces on.
func tracedEnv(receiverURL string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + receiverURL,
		"OTEL_TRACES_SAMPLER=always_on",
		"OTEL_SERVICE_NAME=userd-load",
	}
}

// startTraced starts the traced twin of s, with its receiver.
func startTraced(ctx context.Context, binary string, s *server) (*tracedServer, error) {
	rec, err := startDropReceiver()
	if err != nil {
		return nil, fmt.Errorf("OTLP receiver: %w", err)
	}
	twin, err := s.startTwin(ctx, binary, "traced", tracedEnv(rec.url))
	if err != nil {
		rec.close()
		return nil, err
	}
	u, err := url.Parse(twin.base)
	if err != nil {
		twin.stop()
		rec.close()
		return nil, err
	}
	return &tracedServer{host: u.Host, pid: twin.pid(), receiver: rec, stop: func() { twin.stop(); rec.close() }}, nil
}

// startTwin starts a second `binary serve` with s's settings and
// database, on a port of its own, without the metrics listener, with
// extra variables added.
func (s *server) startTwin(ctx context.Context, binary, name string, extra []string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	twin := &server{base: "http://" + addr, exited: make(chan struct{}),
		logPath: strings.TrimSuffix(s.logPath, ".log") + "-" + name + ".log"}
	var env []string
	for _, kv := range s.env {
		if !strings.HasPrefix(kv, "USERD_HTTP_ADDR=") && !strings.HasPrefix(kv, "USERD_METRICS_ADDR=") &&
			!strings.HasPrefix(kv, "USERD_PPROF=") {
			env = append(env, kv)
		}
	}
	env = append(append(env, "USERD_HTTP_ADDR="+addr), extra...)
	if err := twin.launch(binary, env); err != nil {
		twin.stop()
		return nil, err
	}
	if err := twin.waitReady(ctx, 60*time.Second); err != nil {
		twin.stop()
		return nil, err
	}
	return twin, nil
}

// errNoTwin: the traced read needs a userd the loader starts.
var errNoTwin = errors.New(scReadTraced + " needs a userd the loader starts (not --target): it starts a traced twin on its database")

// readStepOn is readStep sent to host instead of the target's.
func (t *target) readStepOn(host string) func(w int) step {
	urls := make([]*url.URL, len(t.pool))
	for i, s := range t.pool {
		u := *s.readURL
		u.Host = host
		urls[i] = &u
	}
	return func(w int) step {
		i := w % len(t.pool)
		return func() error {
			s, u := t.pool[i], urls[i]
			i = (i + 1) % len(t.pool)
			return do(t.hc, newGet(u, s.auth), http.StatusOK, nil)
		}
	}
}

// measureTraced measures the traced read at conc on srv's traced twin,
// started the first time.
func (t *target) measureTraced(ctx context.Context, cfg *config, srv *backendServer, backend string, conc int, logf func(string, ...any)) (Point, error) {
	if srv.startTraced == nil {
		return Point{}, errNoTwin
	}
	if srv.traced == nil {
		ts, err := srv.startTraced(ctx)
		if err != nil {
			return Point{}, fmt.Errorf("%s: %w", scReadTraced, err)
		}
		srv.traced = ts
		logf("%s: started a traced userd (every request sampled, exporting to a receiver that drops)", backend)
	}
	mon := newProcMon(srv.traced.pid)
	defer mon.close()
	before := srv.traced.receiver.exports.Load()
	p := measure(ctx, cfg, scReadTraced, backend, conc, t.readStepOn(srv.traced.host), mon, nil)
	logf("%s: %s c=%d: the receiver dropped %d exports (%d bytes so far)", backend, scReadTraced, conc,
		srv.traced.receiver.exports.Load()-before, srv.traced.receiver.octets.Load())
	return p, nil
}

// tracedGoals: the traced read against the read, level by level.
func tracedGoals(r *Report) []Goal {
	var gs []Goal
	for _, p := range r.Results {
		if p.Scenario != scReadTraced {
			continue
		}
		if read, ok := r.point("read", p.Concurrency); ok && read.RPS > 0 {
			v := p.RPS / read.RPS
			gs = append(gs, Goal{Name: scReadTraced + " req/s ÷ read req/s", Concurrency: p.Concurrency,
				Value: round(v, 3), Target: "≥ 0.9", Met: yes(v >= 0.9), Noisy: noisy(p, read)})
		}
	}
	return gs
}
