package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// newHTTPClient returns the one client every worker shares: keep-alive
// connections, at least one idle connection per worker, no compression.
func newHTTPClient(maxConc int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy: nil,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        2 * maxConc,
		MaxIdleConnsPerHost: 2 * maxConc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

var jsonContentType = []string{"application/json"}

// newGet builds a GET without parsing a URL string: u and auth are shared,
// read-only, by every request that uses them.
func newGet(u *url.URL, auth []string) *http.Request {
	h := http.Header{}
	if auth != nil {
		h["Authorization"] = auth
	}
	return &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: h}
}

// newPost builds a POST of a JSON body.
func newPost(u *url.URL, auth []string, body []byte) *http.Request {
	h := http.Header{"Content-Type": jsonContentType}
	if auth != nil {
		h["Authorization"] = auth
	}
	return &http.Request{
		Method: http.MethodPost, URL: u, Host: u.Host, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

// statusError is an answer with another status than the scenario expects.
type statusError struct {
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.status, e.body) }

// do sends req and checks the status. The body is read to the end (so the
// connection is reused) and, when into is not nil, decoded into it.
func do(hc *http.Client, req *http.Request, want int, into any) error {
	res, err := hc.Do(req) //nolint:gosec // G704: requests go to the userd under test, started by the loader or named by --target; sending them is the harness's job
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }() // read to the end below; Close has nothing to add
	if res.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		_, _ = io.Copy(io.Discard, res.Body)
		return &statusError{status: res.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	if into == nil {
		_, err = io.Copy(io.Discard, res.Body)
		return err
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// step issues one request and reports whether it got the expected answer.
type step func() error

// errSpent is what a step returns when it has no prepared request left:
// its worker stops, and the attempt counts neither as a request nor as an
// error. The scenarios whose requests are made beforehand (an mfaToken
// and a recovery code, a signed passkey assertion) end this way.
var errSpent = errors.New("no prepared request left")

// pointResult is what one run of workers measured.
type pointResult struct {
	requests  int64
	errors    int64
	elapsed   time.Duration
	latencies []time.Duration // sorted
	sample    string          // the first error
	capped    bool
}

// merge adds r's requests to p's (their latencies then need sorting).
func (p pointResult) merge(r pointResult) pointResult {
	p.requests += r.requests
	p.errors += r.errors
	p.elapsed += r.elapsed
	p.latencies = append(p.latencies, r.latencies...)
	if p.sample == "" {
		p.sample = r.sample
	}
	p.capped = p.capped || r.capped
	return p
}

// runPoint runs conc closed-loop workers, each sending its next request
// when the previous one has been answered, until dur has passed or
// maxRequests requests have been sent, or every worker's step has said
// errSpent. newStep is called once per worker, so that a
// worker's state (a token chain, a counter) is its own.
func runPoint(ctx context.Context, newStep func(worker int) step, conc int, dur time.Duration, maxRequests int64) pointResult {
	var (
		sent     atomic.Int64
		failures atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		sample   string
	)
	steps := make([]step, conc)
	for w := range conc {
		steps[w] = newStep(w)
	}
	start := time.Now()
	deadline := start.Add(dur)
	for w := range conc {
		wg.Go(func() {
			s := steps[w]
			lat := make([]time.Duration, 0, 1024)
			var firstErr string
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) || sent.Add(1) > maxRequests {
					break
				}
				err := s()
				if errors.Is(err, errSpent) {
					break
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					failures.Add(1)
					if firstErr == "" {
						firstErr = err.Error()
					}
				}
			}
			mu.Lock()
			all = append(all, lat...)
			if sample == "" {
				sample = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	return pointResult{
		requests:  int64(len(all)),
		errors:    failures.Load(),
		elapsed:   elapsed,
		latencies: all,
		sample:    sample,
		capped:    sent.Load() > maxRequests,
	}
}

// quantile returns the q-quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
