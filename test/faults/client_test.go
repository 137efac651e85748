package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// api sends requests to one userd base URL.
type api struct {
	base   string
	client *http.Client
}

// newAPI returns a client for base with up to conns keep-alive
// connections and a per-request limit.
func newAPI(base string, conns int, timeout time.Duration) *api {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     30 * time.Second,
	}
	return &api{base: base, client: &http.Client{Timeout: timeout, Transport: tr}}
}

func (a *api) close() { a.client.CloseIdleConnections() }

// result is one exchange as the client saw it.
type result struct {
	method, path string
	status       int
	header       http.Header
	body         []byte
	err          error
	start, end   time.Time
	// wrote is when the request was completely written (zero if never).
	wrote time.Time
}

func (r result) latency() time.Duration { return r.end.Sub(r.start) }
func (r result) ok() bool               { return r.err == nil && r.status >= 200 && r.status < 300 }

func (r result) String() string {
	if r.err != nil {
		return fmt.Sprintf("%s %s: %v after %s", r.method, r.path, r.err, r.latency().Round(time.Millisecond))
	}
	return fmt.Sprintf("%s %s: %d after %s: %s", r.method, r.path, r.status, r.latency().Round(time.Millisecond), truncate(string(r.body), 300))
}

// do sends a JSON request; body nil sends none.
func (a *api) do(ctx context.Context, method, path string, body any, token string) result {
	r := result{method: method, path: path}
	var rd io.Reader
	if body != nil {
		enc, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(enc)
	}
	var mu sync.Mutex
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		mu.Lock()
		r.wrote = time.Now()
		mu.Unlock()
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, a.base+path, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r.start = time.Now()
	res, err := a.client.Do(req)
	if err == nil {
		r.status, r.header = res.StatusCode, res.Header
		r.body, err = io.ReadAll(res.Body)
		_ = res.Body.Close()
	}
	r.end = time.Now()
	r.err = err
	mu.Lock()
	defer mu.Unlock()
	return r
}

type user struct {
	ID    string `json:"id"`
	Email string `json:"email"`
}

type tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	User         user   `json:"user"`
}

func (a *api) createUser(ctx context.Context, email string) result {
	return a.do(ctx, http.MethodPost, "/api/users", map[string]any{
		"name": "Fault Tester", "email": email, "password": userPassword,
	}, "")
}

func (a *api) login(ctx context.Context, email, password string) result {
	return a.do(ctx, http.MethodPost, "/auth/login", map[string]string{"email": email, "password": password}, "")
}

func (a *api) refresh(ctx context.Context, token string) result {
	return a.do(ctx, http.MethodPost, "/auth/refresh-token", map[string]string{"refreshToken": token}, "")
}

func (a *api) getUser(ctx context.Context, id, token string) result {
	return a.do(ctx, http.MethodGet, "/api/users/"+id, nil, token)
}

// mustLogin logs in and returns the tokens, failing the test otherwise.
func (a *api) mustLogin(t *testing.T, email, password string) tokens {
	t.Helper()
	r := a.login(context.Background(), email, password)
	if r.status != http.StatusOK {
		t.Fatalf("login %s: %s", email, r)
	}
	var tk tokens
	mustDecode(t, r, &tk)
	return tk
}

// adminLogin logs the bootstrap admin in. userd answers /readyz with 200
// as soon as it listens, before its start hook has created the bootstrap
// admin (one password hash later), so a login right after readiness may
// be a 401: it is retried a few times, fewer than the five failures that
// would lock the account, and the race is reported.
func (a *api) adminLogin(t *testing.T) tokens {
	t.Helper()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		r := a.login(context.Background(), adminEmail, adminPassword)
		if r.status == http.StatusOK {
			if attempt > 1 {
				t.Logf("note: /readyz said 200 but the bootstrap admin could log in only %s later, at attempt %d "+
					"(the earlier attempts were 401 and counted as failed logins)", time.Since(start).Round(time.Millisecond), attempt)
			}
			var tk tokens
			mustDecode(t, r, &tk)
			return tk
		}
		if r.status != http.StatusUnauthorized || attempt == 4 {
			t.Fatalf("admin login: %s", r)
		}
		time.Sleep(time.Duration(attempt) * 150 * time.Millisecond)
	}
}

// mustCreate registers email and returns the user.
func (a *api) mustCreate(t *testing.T, email string) user {
	t.Helper()
	r := a.createUser(context.Background(), email)
	if r.status != http.StatusCreated {
		t.Fatalf("create %s: %s", email, r)
	}
	var u user
	mustDecode(t, r, &u)
	return u
}

func mustDecode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: decode %q: %v", r.method, r.path, truncate(string(r.body), 200), err)
	}
}

// problemBody is the part of an RFC 9457 body the cases check.
type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// internalsMarkers are fragments that must never appear in an error
// body: driver, SQL, address, file and stack-trace text.
var internalsMarkers = []string{
	"sql", "select ", "insert ", "update ", "pgx", "pgconn", "postgres", "sqlite", "gorm",
	"dial ", "tcp", "refused", "127.0.0.1", "goroutine", ".go:", "panic", "driver", "connection",
	"context deadline", "timeout", "eof",
}

// checkProblem returns what is wrong with an error answer: not
// problem+json, not parseable, or carrying internals. wantCode, when not
// empty, is the required code.
func checkProblem(r result, wantCode string) string {
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		return fmt.Sprintf("Content-Type %q, want application/problem+json", ct)
	}
	var p problemBody
	if err := json.Unmarshal(r.body, &p); err != nil {
		return fmt.Sprintf("body is not JSON: %v", err)
	}
	if p.Status != r.status {
		return fmt.Sprintf("body status %d on a %d", p.Status, r.status)
	}
	if wantCode != "" && p.Code != wantCode {
		return fmt.Sprintf("code %q, want %q", p.Code, wantCode)
	}
	low := strings.ToLower(string(r.body))
	for _, m := range internalsMarkers {
		if strings.Contains(low, m) {
			return fmt.Sprintf("body carries internals (%q)", m)
		}
	}
	return ""
}

// errClass names a transport error for the tallies.
func errClass(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case strings.Contains(err.Error(), "server closed idle connection"):
		return "server closed idle connection"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return "other: " + err.Error()
}

// stats tallies results by operation.
type stats struct {
	mu  sync.Mutex
	ops map[string]*opStats
}

type opStats struct {
	sent     int
	statuses map[int]int
	errors   map[string]int
	all      []time.Duration
	ok       []time.Duration
}

func newStats() *stats { return &stats{ops: map[string]*opStats{}} }

func (s *stats) add(op string, r result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops[op]
	if o == nil {
		o = &opStats{statuses: map[int]int{}, errors: map[string]int{}}
		s.ops[op] = o
	}
	o.sent++
	if r.err != nil {
		o.errors[errClass(r.err)]++
	} else {
		o.statuses[r.status]++
	}
	o.all = append(o.all, r.latency())
	if r.ok() {
		o.ok = append(o.ok, r.latency())
	}
}

// get returns a copy of op's tallies.
func (s *stats) get(op string) opStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops[op]
	if o == nil {
		return opStats{statuses: map[int]int{}, errors: map[string]int{}}
	}
	c := opStats{sent: o.sent, statuses: map[int]int{}, errors: map[string]int{},
		all: append([]time.Duration(nil), o.all...), ok: append([]time.Duration(nil), o.ok...)}
	for k, v := range o.statuses {
		c.statuses[k] = v
	}
	for k, v := range o.errors {
		c.errors[k] = v
	}
	return c
}

func (s *stats) total() opStats {
	s.mu.Lock()
	names := make([]string, 0, len(s.ops))
	for k := range s.ops {
		names = append(names, k)
	}
	s.mu.Unlock()
	t := opStats{statuses: map[int]int{}, errors: map[string]int{}}
	for _, n := range names {
		o := s.get(n)
		t.sent += o.sent
		for k, v := range o.statuses {
			t.statuses[k] += v
		}
		for k, v := range o.errors {
			t.errors[k] += v
		}
		t.all = append(t.all, o.all...)
		t.ok = append(t.ok, o.ok...)
	}
	return t
}

// String renders every operation: sent, statuses, errors and latencies.
func (s *stats) String() string {
	s.mu.Lock()
	names := make([]string, 0, len(s.ops))
	for k := range s.ops {
		names = append(names, k)
	}
	s.mu.Unlock()
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		o := s.get(n)
		fmt.Fprintf(&b, "    %-10s %s\n", n, o.String())
	}
	return b.String()
}

func (o opStats) String() string {
	codes := make([]int, 0, len(o.statuses))
	for c := range o.statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", o.statuses[c], c))
	}
	errs := make([]string, 0, len(o.errors))
	for e, n := range o.errors {
		errs = append(errs, fmt.Sprintf("%d×%s", n, e))
	}
	sort.Strings(errs)
	parts = append(parts, errs...)
	return fmt.Sprintf("sent %d [%s]; latency all p50 %s p99 %s max %s; 2xx p50 %s p99 %s max %s",
		o.sent, strings.Join(parts, " "),
		ms(percentile(o.all, 50)), ms(percentile(o.all, 99)), ms(percentile(o.all, 100)),
		ms(percentile(o.ok, 50)), ms(percentile(o.ok, 99)), ms(percentile(o.ok, 100)))
}

func (o opStats) count2xx() int {
	n := 0
	for c, v := range o.statuses {
		if c >= 200 && c < 300 {
			n += v
		}
	}
	return n
}

func (o opStats) errorCount() int {
	n := 0
	for _, v := range o.errors {
		n += v
	}
	return n
}

// percentile returns the p-th percentile (nearest rank) of ds; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// runWorkers runs n workers, each calling fn with its index and an
// iteration count, until ctx ends, fn returns false or maxIter iterations
// are done. pace is a pause between a worker's iterations. It returns when
// every worker has stopped.
func runWorkers(ctx context.Context, n, maxIter int, pace time.Duration, fn func(ctx context.Context, w, i int) bool) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < maxIter && ctx.Err() == nil; i++ {
				if !fn(ctx, w, i) {
					return
				}
				if pace > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(pace):
					}
				}
			}
		}()
	}
	wg.Wait()
}

// runID makes emails unique across runs on a reused database.
func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// acked is a concurrency-safe list of acknowledged creates.
type acked struct {
	mu    sync.Mutex
	users []user
}

func (a *acked) add(u user) {
	a.mu.Lock()
	a.users = append(a.users, u)
	a.mu.Unlock()
}

func (a *acked) list() []user {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]user(nil), a.users...)
}

func (a *acked) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.users)
}

// pick returns the i-th user modulo the length, ok false when empty.
func (a *acked) pick(i int) (user, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.users) == 0 {
		return user{}, false
	}
	return a.users[i%len(a.users)], true
}

// verifyReadable reads every user as the admin and returns how many
// answered 200 with the same email, and the failures.
func verifyReadable(ctx context.Context, a *api, adminToken string, users []user) (ok int, failures []string) {
	var mu sync.Mutex
	next := make(chan user)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range next {
				r := a.getUser(ctx, u.ID, adminToken)
				var got user
				good := r.status == http.StatusOK && json.Unmarshal(r.body, &got) == nil && got.Email == u.Email
				mu.Lock()
				if good {
					ok++
				} else if len(failures) < 20 {
					failures = append(failures, fmt.Sprintf("%s (%s): %s", u.ID, u.Email, r))
				}
				mu.Unlock()
			}
		}()
	}
	for _, u := range users {
		next <- u
	}
	close(next)
	wg.Wait()
	return ok, failures
}
