package kit

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// Reply is an HTTP answer with its body read.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Code is the problem code of a problem+json answer, "" otherwise.
func (r Reply) Code() string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Body, &p) // not a problem: no code
	return p.Code
}

// String is the status and the body, for a test's failure message.
func (r Reply) String() string { return strconv.Itoa(r.Status) + " " + string(r.Body) }

// Client sends the suites' requests. A redirect is an answer for the test
// to read, never one to follow.
var Client = &http.Client{
	Timeout:       30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// NewRequest makes a request of the API: body JSON-encoded (nil for
// none), an optional bearer token, Accept: application/json, and extra
// headers given as name, value pairs, set last.
func NewRequest(t testing.TB, method, url string, body any, token string, headers ...string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// Send makes the request of NewRequest and reads the whole answer.
func Send(t testing.TB, method, url string, body any, token string, headers ...string) Reply {
	t.Helper()
	return Do(t, NewRequest(t, method, url, body, token, headers...))
}

// Do sends req with Client and reads the whole answer; it fails t when
// there is none.
func Do(t testing.TB, req *http.Request) Reply {
	t.Helper()
	r, err := DoWith(Client, req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return r
}

// DoWith sends req with c and reads the whole answer, for a caller that
// must not stop its test (a goroutine of its own) or needs another client.
func DoWith(c *http.Client, req *http.Request) (Reply, error) {
	res, err := c.Do(req) //nolint:gosec // G704: a test's own request, to a server it started
	if err != nil {
		return Reply{}, err
	}
	defer func() { _ = res.Body.Close() }() // read whole below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// Discard reads and closes a response body, so that its connection can be
// reused.
func Discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, body) // the bytes are not wanted
	_ = body.Close()                 // a read-only body: nothing is lost
}
