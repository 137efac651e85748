package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestHostileClients (case 5) attacks the HTTP server: slowloris headers
// and silent connections, slow bodies, 10,000 idle keep-alive
// connections, oversized headers and a client that does not read its
// answers. Each attack must be cut by its server timeout
// (ReadHeaderTimeout, ReadTimeout, IdleTimeout, MaxHeaderBytes,
// WriteTimeout), while a normal client, probing every 100 ms on a new
// connection, keeps being served.
func TestHostileClients(t *testing.T) {
	requireFaults(t)
	const (
		readHeaderTimeout = 2 * time.Second
		readTimeout       = 4 * time.Second
		writeTimeout      = 5 * time.Second
		idleTimeout       = 5 * time.Second
		margin            = 1500 * time.Millisecond
		slowHeaders       = 300
		silent            = 200
		// More slow bodies than the default USERD_MAX_INFLIGHT (256).
		slowBodies     = 300
		idleWanted     = 10000
		probeP99Limit  = time.Second
		probeMaxLimit  = 2 * time.Second
		listUsersCount = 200
	)
	path := filepath.Join(t.TempDir(), "userd.db")
	srv := newServer(t, "userd", map[string]string{
		"USERD_DB_DRIVER":           "sqlite",
		"USERD_DB_DSN":              path,
		"USERD_READ_HEADER_TIMEOUT": readHeaderTimeout.String(),
		"USERD_READ_TIMEOUT":        readTimeout.String(),
		"USERD_WRITE_TIMEOUT":       writeTimeout.String(),
		"USERD_IDLE_TIMEOUT":        idleTimeout.String(),
	})
	srv.start()
	a := newAPI(srv.base, 8, 10*time.Second)
	defer a.close()
	admin := a.adminLogin(t)
	run := runID()
	// Enough users that a list page is some 35 KB, for the slow reader.
	runWorkers(context.Background(), 8, listUsersCount/8, 0, func(_ context.Context, w, i int) bool {
		a.mustCreate(t, fmt.Sprintf("hostile-%s-%d-%d@example.com", run, w, i))
		return true
	})
	pid := srv.pid()
	baseFDs, baseRSS := openFDs(pid), procStatus(pid)["VmRSS"]

	// The normal client: a new connection every 100 ms, all through.
	var phase atomic.Value
	phase.Store("quiet")
	probeStats := newStats()
	var probeBad []string
	var probeMu sync.Mutex
	probeCtx, stopProbe := context.WithCancel(context.Background())
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		tr := &http.Transport{DisableKeepAlives: true}
		probe := &api{base: srv.base, client: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
		runWorkers(probeCtx, 1, 3000, 100*time.Millisecond, func(ctx context.Context, _, _ int) bool {
			r := probe.do(ctx, http.MethodGet, "/api/users/me", nil, admin.AccessToken)
			if errors.Is(r.err, context.Canceled) {
				return false
			}
			p := phase.Load().(string)
			probeStats.add(p, r)
			if r.status != http.StatusOK {
				probeMu.Lock()
				if len(probeBad) < 20 {
					probeBad = append(probeBad, fmt.Sprintf("during %s: %s", p, r))
				}
				probeMu.Unlock()
			}
			return true
		})
	}()
	time.Sleep(500 * time.Millisecond)

	type finding struct {
		what   string
		ok     bool
		detail string
	}
	var findings []finding
	report := func(what string, ok bool, format string, args ...any) {
		findings = append(findings, finding{what, ok, fmt.Sprintf(format, args...)})
	}

	// A. Slowloris: headers a byte every 100 ms, and silent connections.
	phase.Store("slowloris")
	{
		var wg sync.WaitGroup
		outcomes := make([]connOutcome, slowHeaders+silent)
		for i := range outcomes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var drip []byte
				if i < slowHeaders {
					drip = []byte("GET /api/users/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 1000))
				}
				outcomes[i] = dripConn(srv.addr, drip, 100*time.Millisecond, 10*time.Second)
			}()
		}
		wg.Wait()
		s := summarize(outcomes[:slowHeaders])
		q := summarize(outcomes[slowHeaders:])
		report("slowloris headers", s.allClosedWithin(readHeaderTimeout+margin) && s.minLife >= readHeaderTimeout-100*time.Millisecond,
			"%d connections sending a header byte every 100 ms: %s (ReadHeaderTimeout %s)", slowHeaders, s, readHeaderTimeout)
		report("silent connections", q.allClosedWithin(readHeaderTimeout+margin),
			"%d connections sending nothing: %s (ReadHeaderTimeout %s)", silent, q, readHeaderTimeout)
	}

	// B. Slow bodies: complete headers, then a body byte every 200 ms.
	phase.Store("slow bodies")
	{
		var wg sync.WaitGroup
		outcomes := make([]connOutcome, slowBodies)
		body := `{"name":"Slow","email":"slow@example.com","password":"` + strings.Repeat("p", 900) + `"}`
		for i := range outcomes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				head := fmt.Sprintf("POST /api/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
					"Content-Length: %d\r\n\r\n", len(body))
				outcomes[i] = dripConnAfter(srv.addr, []byte(head), []byte(body), 200*time.Millisecond, 15*time.Second)
			}()
		}
		wg.Wait()
		s := summarize(outcomes)
		report("slow bodies", s.allClosedWithin(readTimeout+margin),
			"%d requests whose body arrives a byte every 200 ms: %s (ReadTimeout %s)", slowBodies, s, readTimeout)
	}

	// C. Idle keep-alive connections: one request each, then silence.
	phase.Store("idle connections")
	idle := idleWanted
	if fileLimit < idleWanted+1000 {
		idle = max(int(fileLimit)-1000, 100)
	}
	var peakFDs int
	var peakRSS int64
	{
		outcomes := make([]connOutcome, idle)
		next := make(chan int)
		var wg sync.WaitGroup
		stopSample := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				peakFDs = max(peakFDs, openFDs(pid))
				peakRSS = max(peakRSS, procStatus(pid)["VmRSS"])
				select {
				case <-stopSample:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
		opened := time.Now()
		var waiting sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					wait, o := idleConn(srv.addr, 30*time.Second)
					if wait == nil {
						outcomes[i] = o
						continue
					}
					waiting.Add(1)
					go func() {
						defer waiting.Done()
						outcomes[i] = wait()
					}()
				}
			}()
		}
		for i := range outcomes {
			next <- i
		}
		close(next)
		wg.Wait()
		allOpen := time.Since(opened)
		waiting.Wait()
		close(stopSample)
		<-sampled
		s := summarize(outcomes)
		report("idle connections", s.allClosedWithin(idleTimeout+margin) && s.failed == 0,
			"%d keep-alive connections (GET /healthz, then idle), all dialed in %s: %s after their answer (IdleTimeout %s); "+
				"server fds %d before, peak %d; VmRSS %d MiB before, peak %d MiB",
			idle, allOpen.Round(time.Millisecond), s, idleTimeout, baseFDs, peakFDs, baseRSS>>10, peakRSS>>10)
		if idle < idleWanted {
			t.Logf("note: RLIMIT_NOFILE %d allows only %d idle connections, not %d", fileLimit, idle, idleWanted)
		}
	}

	// D. Oversized headers: over MaxHeaderBytes (32 KiB, plus net/http's
	// 4 KiB of slack) is a 431; just under it is served.
	phase.Store("oversized headers")
	{
		big := rawRequest(srv.addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "+strings.Repeat("b", 64<<10)+"\r\n\r\n")
		var many strings.Builder
		for i := range 100 {
			fmt.Fprintf(&many, "X-Many-%d: %s\r\n", i, strings.Repeat("m", 500))
		}
		lots := rawRequest(srv.addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"+many.String()+"\r\n")
		fits := rawRequest(srv.addr, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fits: "+strings.Repeat("f", 30<<10)+"\r\n\r\n")
		report("oversized header", big.status == http.StatusRequestHeaderFieldsTooLarge,
			"one 64 KiB header: %s", big)
		report("many headers", lots.status == http.StatusRequestHeaderFieldsTooLarge,
			"100 headers of 500 bytes (50 KB): %s", lots)
		report("large header under the limit", fits.status == http.StatusOK, "one 30 KiB header: %s", fits)
	}

	// E. A client that pipelines list requests and never reads: the
	// blocked write ends at WriteTimeout and the connection is closed.
	phase.Store("slow reader")
	{
		const pipelined = 200
		res := slowReader(srv.addr, admin.AccessToken, pipelined, writeTimeout+2*time.Second)
		report("slow reader", res.closed && res.answers < pipelined,
			"%d pipelined GET /api/users?limit=200 (≈35 KB each), receive buffer 4 KiB, not read for %s: %s (WriteTimeout %s)",
			pipelined, writeTimeout+2*time.Second, res, writeTimeout)
	}

	phase.Store("after")
	time.Sleep(500 * time.Millisecond)
	stopProbe()
	<-probeDone
	afterFDs := openFDs(pid)

	t.Logf("did: server timeouts ReadHeader %s, Read %s, Write %s, Idle %s; RLIMIT_NOFILE %d; one attack after another:",
		readHeaderTimeout, readTimeout, writeTimeout, idleTimeout, fileLimit)
	for _, f := range findings {
		verdict := "held"
		if !f.ok {
			verdict = "FAILED"
		}
		t.Logf("  %-28s %s: %s", f.what, verdict, f.detail)
	}
	t.Logf("normal client (GET /api/users/me on a new connection every 100 ms), by phase:\n%s", probeStats)
	all := probeStats.total()
	t.Logf("normal client overall: %d sent, %d × 200, p99 %s (limit %s), max %s (limit %s); server fds after the attacks %d (before %d)",
		all.sent, all.statuses[http.StatusOK], ms(percentile(all.all, 99)), probeP99Limit, ms(percentile(all.all, 100)), probeMaxLimit,
		afterFDs, baseFDs)
	reportLogs(t, srv)

	for _, f := range findings {
		if !f.ok {
			t.Errorf("%s: %s", f.what, f.detail)
		}
	}
	for _, b := range probeBad {
		t.Errorf("normal client not served: %s", b)
	}
	if p := percentile(all.all, 99); p > probeP99Limit {
		t.Errorf("normal client p99 %s, over %s", p, probeP99Limit)
	}
	if p := percentile(all.all, 100); p > probeMaxLimit {
		t.Errorf("normal client max %s, over %s", p, probeMaxLimit)
	}
	if all.sent-all.statuses[http.StatusOK] > 0 {
		t.Errorf("normal client: %d of %d requests not answered 200", all.sent-all.statuses[http.StatusOK], all.sent)
	}
}

// connOutcome is what became of one hostile connection.
type connOutcome struct {
	// life is from the connection (or the answer, for idle ones) to the
	// server's close; closed is false when the client gave up first.
	life   time.Duration
	closed bool
	// answer is the status line the server sent, if any.
	answer string
	err    error
}

var problemCode = regexp.MustCompile(`"code":"([a-z_]+)"`)

// dripConn dials addr and writes drip one byte per interval (nothing if
// drip is empty) until the server closes the connection or limit passes.
func dripConn(addr string, drip []byte, interval, limit time.Duration) connOutcome {
	return dripConnAfter(addr, nil, drip, interval, limit)
}

// dripConnAfter writes head at once, then drip one byte per interval.
func dripConnAfter(addr string, head, drip []byte, interval, limit time.Duration) connOutcome {
	// The connection's life is counted from before the dial: the server's
	// timeout cannot start earlier, so a life measured short is the
	// server's doing, never a goroutine of this test scheduled late after
	// its dial returned (hundreds of them dial at once on two cores).
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return connOutcome{err: err}
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(start.Add(limit))
	closed := make(chan connOutcome, 1)
	go func() {
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		var rest []byte
		if err == nil {
			rest, err = io.ReadAll(br)
		}
		o := connOutcome{life: time.Since(start), answer: strings.TrimSpace(line)}
		if m := problemCode.FindSubmatch(rest); m != nil {
			o.answer += " " + string(m[1])
		}
		o.closed = err == nil || !isTimeout(err)
		closed <- o
	}()
	if len(head) > 0 {
		if _, err := c.Write(head); err != nil {
			return connOutcome{err: err}
		}
	}
	for i := 0; ; i++ {
		var tick <-chan time.Time
		if i < len(drip) {
			tick = time.After(interval)
		}
		select {
		case o := <-closed:
			return o
		case <-tick:
			if _, err := c.Write(drip[i : i+1]); err != nil {
				// The server closed it; the reader reports when.
				return <-closed
			}
		}
	}
}

// idleConn sends one GET /healthz and reads the answer; wait then waits
// for the server to close the connection, its life counted from the
// answer. wait is nil when the exchange failed (o says how).
func idleConn(addr string, limit time.Duration) (wait func() connOutcome, o connOutcome) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, connOutcome{err: err}
	}
	_ = c.SetDeadline(time.Now().Add(limit))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		_ = c.Close()
		return nil, connOutcome{err: err}
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		_ = c.Close()
		return nil, connOutcome{err: err}
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	answered := time.Now()
	return func() connOutcome {
		defer func() { _ = c.Close() }()
		_, err := br.ReadByte()
		return connOutcome{life: time.Since(answered), answer: res.Status,
			closed: errors.Is(err, io.EOF) || (err != nil && !isTimeout(err))}
	}, connOutcome{}
}

// outcomeSummary aggregates connOutcomes.
type outcomeSummary struct {
	n, closed, failed         int
	minLife, medLife, maxLife time.Duration
	answers                   map[string]int
	firstErr                  error
}

func summarize(outs []connOutcome) outcomeSummary {
	s := outcomeSummary{n: len(outs), answers: map[string]int{}}
	var lives []time.Duration
	for _, o := range outs {
		if o.err != nil {
			s.failed++
			if s.firstErr == nil {
				s.firstErr = o.err
			}
			continue
		}
		if o.closed {
			s.closed++
			lives = append(lives, o.life)
		}
		a := o.answer
		if a == "" {
			a = "no answer"
		}
		s.answers[a]++
	}
	s.minLife, s.medLife, s.maxLife = percentile(lives, 0), percentile(lives, 50), percentile(lives, 100)
	return s
}

func (s outcomeSummary) allClosedWithin(d time.Duration) bool {
	return s.failed == 0 && s.closed == s.n && s.maxLife <= d
}

func (s outcomeSummary) String() string {
	var answers []string
	for a, n := range s.answers {
		answers = append(answers, fmt.Sprintf("%d × %q", n, a))
	}
	out := fmt.Sprintf("%d/%d closed by the server, after min %s, median %s, max %s; answers: %s",
		s.closed, s.n, ms(s.minLife), ms(s.medLife), ms(s.maxLife), strings.Join(answers, ", "))
	if s.failed > 0 {
		out += fmt.Sprintf("; %d failed on the client side (first: %v)", s.failed, s.firstErr)
	}
	return out
}

// rawAnswer is the answer to a hand-written request.
type rawAnswer struct {
	status      int
	contentType string
	err         error
}

func (r rawAnswer) String() string {
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	return fmt.Sprintf("%d (%s)", r.status, r.contentType)
}

func rawRequest(addr, req string) rawAnswer {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, req) }()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return rawAnswer{err: err}
	}
	_ = res.Body.Close()
	return rawAnswer{status: res.StatusCode, contentType: res.Header.Get("Content-Type")}
}

// slowReaderResult is what a client that did not read saw in the end.
type slowReaderResult struct {
	answers int
	closed  bool
	how     string
	bytes   int64
}

func (r slowReaderResult) String() string {
	verdict := "the server kept the connection open"
	if r.closed {
		verdict = "the server closed the connection (" + r.how + ")"
	}
	return fmt.Sprintf("%s after %d complete answers (%d bytes)", verdict, r.answers, r.bytes)
}

// slowReader pipelines n list requests on one connection with a small
// receive buffer, reads nothing for pause, then reads what is left.
func slowReader(addr, token string, n int, pause time.Duration) slowReaderResult {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return slowReaderResult{how: err.Error()}
	}
	defer func() { _ = c.Close() }()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	req := "GET /api/users?limit=200 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\n\r\n"
	go func() {
		w := bufio.NewWriter(c)
		for range n {
			if _, err := w.WriteString(req); err != nil {
				return
			}
		}
		_ = w.Flush()
	}()
	time.Sleep(pause)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	cr := &countingReader{r: c}
	br := bufio.NewReader(cr)
	out := slowReaderResult{}
read:
	for out.answers < n {
		res, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
		}
		if err != nil {
			switch {
			case isTimeout(err):
				out.how = "read timed out: still open"
			default:
				out.closed, out.how = true, err.Error()
			}
			break read
		}
		out.answers++
	}
	out.bytes = cr.n
	return out
}

// isTimeout reports whether err is a network timeout: the deadline we set
// passed with the connection still open.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
