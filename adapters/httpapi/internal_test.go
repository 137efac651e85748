package httpapi

import (
	"strings"
	"testing"
	"time"
)

func TestAcceptsJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		values []string
		want   bool
	}{
		{nil, true},
		{[]string{""}, true},
		{[]string{" , "}, true},
		{[]string{"text/html", "application/json"}, true},
		{[]string{"text/html;level=1;q=0.5, APPLICATION/*;q=0.1"}, true},
		{[]string{"application/json;q=bogus"}, true},
		{[]string{"application/json;q=0.000"}, false},
		{[]string{"image/png"}, false},
		{[]string{"application/jsonp"}, false},
	} {
		if got := acceptsJSON(tt.values); got != tt.want {
			t.Errorf("acceptsJSON(%q) = %v, want %v", tt.values, got, tt.want)
		}
	}
}

func TestIsJSONContentType(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"application/json":                  true,
		"application/json;charset=utf-8":    true,
		"APPLICATION/JSON":                  true,
		"application/problem+json":          true,
		"application/json; charset":         false, // unparsable parameter
		"text/json":                         false,
		"application/+json-ish":             false,
		"application/x-www-form-urlencoded": false,
		"":                                  false,
	} {
		if got := isJSONContentType(v); got != want {
			t.Errorf("isJSONContentType(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                       "1",
		time.Millisecond:        "1",
		time.Second:             "1",
		1500 * time.Millisecond: "2",
		30 * time.Second:        "30",
		15 * time.Minute:        "900",
	} {
		if got := retryAfter(d); got != want {
			t.Errorf("retryAfter(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSecondsUntil(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		at   time.Time
		want int64
	}{
		{now.Add(15 * time.Minute), 900},
		{now.Add(15*time.Minute - time.Millisecond), 900},
		{now.Add(15*time.Minute - 700*time.Millisecond), 900},
		{now.Add(15*time.Minute + 300*time.Millisecond), 901},
		{now.Add(-time.Hour), 0},
	} {
		if got := secondsUntil(tt.at, now); got != tt.want {
			t.Errorf("secondsUntil(%v) = %d, want %d", tt.at.Sub(now), got, tt.want)
		}
	}
}

// BenchmarkIsB64Token checks a bearer token the size of userd's (EdDSA,
// with profiles, sid and amr claims).
func BenchmarkIsB64Token(b *testing.B) {
	tok := strings.Repeat("eyJhbGciOiJFZERTQSIsImtpZCI6IjEyMyJ9.", 12) + "abc_-DEF"
	for b.Loop() {
		if !isB64Token(tok) {
			b.Fatal("not a b64token")
		}
	}
}

// Without a tracer provider (traces off) the chain has no tracer at all:
// requestID begins no span and puts nothing in the request's context
// (TestTraces_off_allocate_nothing_per_request prices it).
func TestNewTracer_off_without_provider(t *testing.T) {
	t.Parallel()
	if tr := newTracer(Options{}); tr != nil {
		t.Fatalf("newTracer without a provider = %+v, want nil", tr)
	}
}
