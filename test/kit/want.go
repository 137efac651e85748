package kit

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"testing"
)

// Want fails t unless r has the status, and decodes its body into v (when
// not nil), which names the members the test reads: others are ignored.
func Want(t testing.TB, what string, r Reply, status int, v any) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.Status, r.Body, status)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			t.Fatalf("%s: %v in %s", what, err, r.Body)
		}
	}
}

// Expect fails t unless r has the status and, when code is not empty, the
// problem code.
func Expect(t testing.TB, what string, r Reply, status int, code string) {
	t.Helper()
	if r.Status != status || code != "" && r.Code() != code {
		t.Fatalf("%s: got %s, want %d %s", what, r, status, code)
	}
}

// WantJSON is the contract's check of a JSON answer: the status, the
// Content-Type application/json, and a body that decodes into v with no
// member v does not name (so that nothing else, a hash say, is in it).
func WantJSON(t testing.TB, r Reply, status int, v any) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if mt := MediaType(r.Header); mt != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", r.Header.Get("Content-Type"))
	}
	if v == nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("body %s: %v", r.Body, err)
	}
}

// Problem is a problem details answer (RFC 9457) with userd's members.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Code     string `json:"code"`
	Errors   []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Fields returns the fields named in the errors array.
func (p Problem) Fields() []string {
	out := make([]string, len(p.Errors))
	for i, e := range p.Errors {
		out[i] = e.Field
	}
	return out
}

// WantProblem is the contract's check of a problem answer: the status and
// code, the Content-Type application/problem+json, every member of RFC
// 9457 that userd promises, and no member that Problem does not name. It
// returns the problem.
func WantProblem(t testing.TB, r Reply, status int, code string) Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if mt := MediaType(r.Header); mt != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", r.Header.Get("Content-Type"))
	}
	var p Problem
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body %s: %v", r.Body, err)
	}
	if p.Code != code {
		t.Errorf("code = %q, want %q (detail %q)", p.Code, code, p.Detail)
	}
	if p.Status != status || p.Type != "about:blank" || p.Title != http.StatusText(status) || p.Instance == "" || p.Detail == "" {
		t.Errorf("incomplete problem: %+v", p)
	}
	return p
}

// MediaType is the media type of the header's Content-Type, without its
// parameters.
func MediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt
}
