package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestGracefulShutdown (case 3) sends SIGTERM to userd under a load of
// creates and reads, with three creates whose bodies are still arriving.
// Requests already sent are answered (no reset), the listener closes so
// that new connections are refused while the in-flight requests drain,
// the process exits 0 within USERD_SHUTDOWN_TIMEOUT, and every
// acknowledged create is there after a restart.
func TestGracefulShutdown(t *testing.T) {
	requireFaults(t)
	const (
		shutdownTimeout = 5 * time.Second
		exitMargin      = time.Second
		workers         = 8 // six create, two read
		slowBodies      = 3
		// A request completely written this long before the signal has
		// certainly been read by the server: it must be answered.
		sentBefore = 100 * time.Millisecond
	)
	path := filepath.Join(t.TempDir(), "userd.db")
	srv := newServer(t, "userd", map[string]string{
		"USERD_DB_DRIVER":        "sqlite",
		"USERD_DB_DSN":           path,
		"USERD_SHUTDOWN_TIMEOUT": shutdownTimeout.String(),
		// Hashing that takes a few milliseconds keeps creates in flight.
		"USERD_ARGON2_MEMORY_KIB": "8192",
		"USERD_ARGON2_ITERATIONS": "2",
	})
	srv.start()
	a := newAPI(srv.base, workers, 10*time.Second)
	defer a.close()
	admin := a.adminLogin(t)
	run := runID()

	var (
		mu      sync.Mutex
		results []result
		created acked
		// unanswered are the creates that got no answer at all.
		unanswered []string
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runWorkers(loadCtx, workers, 5000, 0, func(ctx context.Context, w, i int) bool {
			var r result
			email := ""
			if w < 6 {
				email = fmt.Sprintf("term-%s-%d-%d@example.com", run, w, i)
				r = a.createUser(ctx, email)
			} else if u, ok := created.pick(i); ok {
				r = a.getUser(ctx, u.ID, admin.AccessToken)
			} else {
				r = a.do(ctx, http.MethodGet, "/api/users/me", nil, admin.AccessToken)
			}
			if errors.Is(r.err, context.Canceled) {
				return false
			}
			mu.Lock()
			results = append(results, r)
			if email != "" && r.err != nil {
				unanswered = append(unanswered, email)
			}
			mu.Unlock()
			if r.status == http.StatusCreated {
				var u user
				if json.Unmarshal(r.body, &u) == nil {
					created.add(u)
				}
			}
			if r.err != nil {
				// Refused while the process drains: do not spin.
				time.Sleep(10 * time.Millisecond)
			}
			return true
		})
	}()

	// Creates whose body is half sent when the signal comes.
	release := make(chan struct{})
	type slowResult struct {
		email  string
		status int
		body   string
		err    error
		done   time.Time
	}
	slow := make(chan slowResult, slowBodies)
	time.Sleep(time.Second)
	for i := range slowBodies {
		email := fmt.Sprintf("slow-%s-%d@example.com", run, i)
		go func() {
			status, body, err := slowCreate(srv.addr, email, release)
			slow <- slowResult{email, status, body, err, time.Now()}
		}()
	}
	time.Sleep(time.Second)

	// The signal, then a dialer that watches the listener close.
	sigAt := time.Now()
	srv.signal(syscall.SIGTERM)
	type dialResult struct {
		at time.Time
		ok bool
	}
	var dials []dialResult
	dialDone := make(chan struct{})
	go func() {
		defer close(dialDone)
		for time.Since(sigAt) < shutdownTimeout+exitMargin && srv.running() {
			c, err := net.DialTimeout("tcp", srv.addr, time.Second)
			if err == nil {
				_ = c.Close()
			} else if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, syscall.ECONNRESET) {
				// A reset is a refusal too: a dial whose handshake the
				// kernel queued just as the listener closed (seen once in
				// CI, the first dial at +0) is reset, never served.
				t.Errorf("dial after SIGTERM: %v, want connection refused (or reset)", err)
			}
			dials = append(dials, dialResult{time.Now(), err == nil})
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	releasedAt := time.Now()
	close(release)
	code, exited := srv.wait(shutdownTimeout + exitMargin + 5*time.Second)
	exitAt := time.Now()
	<-dialDone
	stopLoad()
	wg.Wait()
	if !exited {
		srv.kill()
		t.Fatalf("userd did not exit within %s of SIGTERM", shutdownTimeout+exitMargin+5*time.Second)
	}

	// The slow creates were in flight: each must have its 201.
	slowOK := 0
	for range slowBodies {
		s := <-slow
		if s.err != nil || s.status != http.StatusCreated {
			t.Errorf("create %s, body half sent at SIGTERM and finished %s after it: status %d, %v, %s",
				s.email, releasedAt.Sub(sigAt).Round(time.Millisecond), s.status, s.err, truncate(s.body, 200))
			continue
		}
		var u user
		if err := json.Unmarshal([]byte(s.body), &u); err != nil {
			t.Errorf("slow create %s: %v", s.email, err)
			continue
		}
		created.add(u)
		slowOK++
	}

	// Judge the load's requests by when they were sent.
	st := newStats()
	var inflight, dropped, notAccepted int
	var closedIdle []string
	var problems []string
	mu.Lock()
	all := results
	mu.Unlock()
	for _, r := range all {
		op := "create"
		if r.method == http.MethodGet {
			op = "read"
		}
		st.add(op, r)
		switch {
		case r.err == nil && !r.ok():
			problems = append(problems, fmt.Sprintf("unexpected answer: %s", r))
		case r.err == nil:
			if r.wrote.Before(sigAt) && r.end.After(sigAt) {
				inflight++
			}
		case !r.wrote.IsZero() && r.wrote.Before(sigAt.Add(-sentBefore)):
			dropped++
			if len(problems) < 20 {
				problems = append(problems, fmt.Sprintf("request sent %s before SIGTERM got no answer: %s",
					sigAt.Sub(r.wrote).Round(time.Millisecond), r))
			}
		default:
			notAccepted++
			if errClass(r.err) != "connection refused" {
				lead := "never completely written"
				if !r.wrote.IsZero() {
					if d := r.wrote.Sub(sigAt).Round(10 * time.Microsecond); d < 0 {
						lead = fmt.Sprintf("written %s before SIGTERM", -d)
					} else {
						lead = fmt.Sprintf("written %s after SIGTERM", d)
					}
				}
				closedIdle = append(closedIdle, fmt.Sprintf("%s (%s)", errClass(r.err), lead))
			}
		}
	}
	var firstRefused time.Time
	acceptedAfterRefusal, refusedWhileAlive := 0, 0
	for _, d := range dials {
		switch {
		case !d.ok && firstRefused.IsZero():
			firstRefused = d.at
			refusedWhileAlive++
		case !d.ok && d.at.Before(exitAt):
			refusedWhileAlive++
		case d.ok && !firstRefused.IsZero():
			acceptedAfterRefusal++
		}
	}

	// Restart on the same file: every acknowledged create is there.
	srv.start()
	acks := created.list()
	readOK, readFailures := verifyReadable(ctx, a, admin.AccessToken, acks)
	// A create without an answer must not have been carried out: the
	// server either served a request to the end or never read it.
	var processedUnanswered []string
	for _, email := range unanswered {
		r := a.do(ctx, http.MethodGet, "/api/users?email="+url.QueryEscape(email), nil, admin.AccessToken)
		if r.status != http.StatusOK {
			t.Errorf("look up %s: %s", email, r)
		} else if strings.Contains(string(r.body), email) {
			processedUnanswered = append(processedUnanswered, email)
		}
	}
	elapsed := exitAt.Sub(sigAt)

	t.Logf("did: %d workers (6 create, 2 read) on SQLite without pause and %d creates with half their body sent; "+
		"SIGTERM at +0; the slow bodies finished at +%s; dialed the port every 10 ms until the exit",
		workers, slowBodies, releasedAt.Sub(sigAt).Round(time.Millisecond))
	t.Logf("requests:\n%s", st)
	t.Logf("answered although in flight at SIGTERM: %d load requests + %d/%d slow-body creates; "+
		"sent ≥ %s before SIGTERM and unanswered: %d; sent later and not accepted (refused or closed while idle): %d",
		inflight, slowOK, slowBodies, sentBefore, dropped, notAccepted)
	if len(closedIdle) > 0 {
		t.Logf("not accepted other than refused (a keep-alive connection closed by the server as idle while the request was on its way): %s",
			strings.Join(closedIdle, ", "))
	}
	if firstRefused.IsZero() {
		t.Logf("listener: no dial was refused before the exit")
	} else {
		t.Logf("listener closed by +%s: %d dials refused while the process was still draining, %d accepted after the first refusal",
			firstRefused.Sub(sigAt).Round(time.Millisecond), refusedWhileAlive, acceptedAfterRefusal)
	}
	t.Logf("exit code %d after %s (limit USERD_SHUTDOWN_TIMEOUT %s + %s)", code, elapsed.Round(time.Millisecond), shutdownTimeout, exitMargin)
	t.Logf("creates acknowledged: %d; verified readable after a restart: %d; lost: %d", len(acks), readOK, len(acks)-readOK)
	t.Logf("creates without any answer: %d, of which carried out all the same (an answer cut off): %d",
		len(unanswered), len(processedUnanswered))
	reportLogs(t, srv)

	for _, p := range problems {
		t.Error(p)
	}
	if code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0; log tail:\n%s", code, srv.logs.tail())
	}
	if elapsed > shutdownTimeout+exitMargin {
		t.Errorf("exit took %s, over USERD_SHUTDOWN_TIMEOUT %s + %s", elapsed, shutdownTimeout, exitMargin)
	}
	if firstRefused.IsZero() || firstRefused.After(releasedAt) {
		t.Errorf("new connections were not refused while in-flight requests drained (first refusal %v)", firstRefused)
	}
	if acceptedAfterRefusal > 0 {
		t.Errorf("%d connections accepted after the listener had refused one", acceptedAfterRefusal)
	}
	if inflight == 0 {
		t.Errorf("no load request was in flight at SIGTERM: the case tested nothing")
	}
	if len(processedUnanswered) > 0 {
		t.Errorf("%d creates were carried out but their answer never came: %v", len(processedUnanswered), processedUnanswered)
	}
	if readOK != len(acks) {
		t.Errorf("%d acknowledged creates lost: %s", len(acks)-readOK, strings.Join(readFailures, "\n"))
	}
}

// slowCreate sends a create whose body is half written until release is
// closed, then the rest, and reads the answer.
func slowCreate(addr, email string, release <-chan struct{}) (int, string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = conn.Close() }()
	body, _ := json.Marshal(map[string]string{"name": "Slow Body", "email": email, "password": userPassword})
	half := len(body) / 2
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(conn, "POST /api/users HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:half]); err != nil {
		return 0, "", err
	}
	<-release
	if _, err := conn.Write(body[half:]); err != nil {
		return 0, "", fmt.Errorf("write the rest of the body: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = res.Body.Close() }()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), nil
}
