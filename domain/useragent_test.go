package domain_test

import (
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// A session keeps MaxUserAgentLen characters of valid UTF-8 without
// control characters; a User-Agent that is that already is kept as is.
func TestSessionUserAgent(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", domain.MaxUserAgentLen)
	for _, tc := range []struct{ raw, want string }{
		{"", ""},
		{"curl/8.5.0", "curl/8.5.0"},
		{"Mozilla/5.0 (X11; Linux x86_64) ünïcode", "Mozilla/5.0 (X11; Linux x86_64) ünïcode"},
		{"a\tb\x00c\u0085d", "a b c d"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"kept \uFFFD", "kept \uFFFD"},
		{long, long},
		{long + "x", long},
		{long[:len(long)-2] + "\n", long[:len(long)-2] + " "},
	} {
		if got := domain.SessionUserAgent(tc.raw); got != tc.want {
			t.Errorf("SessionUserAgent(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// Equal compares sets: order and repetition do not matter, with or
// without a canonical side.
func TestProfilesEqual(t *testing.T) {
	t.Parallel()
	admin, cust := domain.ProfileAdmin, domain.ProfileCustomer
	for _, tc := range []struct {
		a, b domain.Profiles
		want bool
	}{
		{nil, nil, true},
		{nil, domain.Profiles{}, true},
		{domain.Profiles{admin, cust}, domain.Profiles{admin, cust}, true},
		{domain.Profiles{cust, admin}, domain.Profiles{admin, cust}, true},
		{domain.Profiles{admin, admin, cust}, domain.Profiles{cust, admin}, true},
		{domain.Profiles{admin}, domain.Profiles{admin, cust}, false},
		{domain.Profiles{cust}, domain.Profiles{admin}, false},
		{domain.Profiles{admin, admin}, domain.Profiles{admin}, true},
		{nil, domain.Profiles{cust}, false},
	} {
		if got := tc.a.Equal(tc.b); got != tc.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := tc.b.Equal(tc.a); got != tc.want {
			t.Errorf("%v.Equal(%v) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

// The User-Agent of an ordinary request and the profiles of a signed-in
// one cost no allocation.
func TestNoAllocations(t *testing.T) {
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	if n := testing.AllocsPerRun(100, func() { _ = domain.SessionUserAgent(ua) }); n != 0 {
		t.Errorf("SessionUserAgent: %v allocations", n)
	}
	a, b := domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}, domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
	if n := testing.AllocsPerRun(100, func() { _ = a.Equal(b) }); n != 0 {
		t.Errorf("Profiles.Equal: %v allocations", n)
	}
}

func BenchmarkSignedInChecks(b *testing.B) {
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	p := domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
	q := domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
	b.Run("user_agent", func(b *testing.B) {
		for b.Loop() {
			_ = domain.SessionUserAgent(ua)
		}
	})
	b.Run("profiles_equal", func(b *testing.B) {
		for b.Loop() {
			_ = p.Equal(q)
		}
	})
}
