package ratelimit

import (
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLimiter_refuses_past_the_limit_and_refills_over_the_minute(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 120, Now: clk.now})
	ip := netip.MustParseAddr("192.0.2.1")
	for i := range 120 {
		if ok, _ := l.Allow(ip); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	ok, wait := l.Allow(ip)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("121st: ok=%v wait=%v, want refused for 500ms", ok, wait)
	}
	// Refused requests take no token: after half a second exactly one more.
	for range 10 {
		l.Allow(ip)
	}
	clk.t = clk.t.Add(500 * time.Millisecond)
	if ok, _ := l.Allow(ip); !ok {
		t.Fatal("token not refilled after 500ms")
	}
	if ok, _ := l.Allow(ip); ok {
		t.Fatal("more than one token refilled")
	}
	// Other clients are unaffected.
	if ok, _ := l.Allow(netip.MustParseAddr("192.0.2.2")); !ok {
		t.Fatal("another client refused")
	}
	// A full minute refills the bucket to the limit, not beyond.
	clk.t = clk.t.Add(10 * time.Minute)
	for i := range 120 {
		if ok, _ := l.Allow(ip); !ok {
			t.Fatalf("after refill, request %d refused", i+1)
		}
	}
	if ok, _ := l.Allow(ip); ok {
		t.Fatal("bucket grew beyond the limit")
	}
}

func TestLimiter_zero_limit_allows_everything(t *testing.T) {
	l := New(Config{})
	for range 1000 {
		if ok, _ := l.Allow(netip.MustParseAddr("192.0.2.1")); !ok {
			t.Fatal("refused with the limit off")
		}
	}
}

func TestLimiter_memory_is_bounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 10, Now: clk.now})
	base := netip.MustParseAddr("10.0.0.0").As4()
	for i := range maxBuckets + 10 {
		b := base
		b[1], b[2], b[3] = byte(i>>16), byte(i>>8), byte(i)
		l.Allow(netip.AddrFrom4(b))
	}
	if n := l.buckets.Len(); n > maxBuckets {
		t.Fatalf("%d buckets kept, bound is %d", n, maxBuckets)
	}
}

// At the bound, the client seen least recently is forgotten, never one
// that has just been seen: a flood of new addresses cannot give a client
// that has used up its allowance a fresh bucket.
func TestLimiter_flood_of_new_addresses_does_not_reset_an_active_client(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 10, Now: clk.now})
	quiet, busy := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for range 10 {
		l.Allow(quiet)
		l.Allow(busy)
	}
	base := netip.MustParseAddr("10.0.0.0").As4()
	for i := range maxBuckets {
		b := base
		b[1], b[2], b[3] = byte(i>>16), byte(i>>8), byte(i)
		l.Allow(netip.AddrFrom4(b))
		if i%1000 == 0 {
			if ok, _ := l.Allow(busy); ok {
				t.Fatalf("after %d new addresses the busy client got a token back", i+1)
			}
		}
	}
	if ok, _ := l.Allow(busy); ok {
		t.Error("the flood reset the busy client's bucket")
	}
	// The quiet one was forgotten, and comes back as a new client.
	if ok, _ := l.Allow(quiet); !ok {
		t.Error("the least recently seen client was not the one forgotten")
	}
}

// Concurrent first requests of one client share one bucket: exactly the
// limit is allowed, and the refused take nothing.
func TestLimiter_concurrent_requests_share_one_bucket(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 50, Now: clk.now})
	ip := netip.MustParseAddr("192.0.2.1")
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if ok, _ := l.Allow(ip); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 50 {
		t.Fatalf("%d of 800 concurrent requests allowed, want 50", n)
	}
}

// The hot attacker of the security review: at its limit, it keeps
// trying while 200,000 other addresses (twice the table) come and go, and
// is refused every time.
func TestLimiter_hot_attacker_stays_limited_while_200000_addresses_come_and_go(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 10, Now: clk.now})
	attacker := netip.MustParseAddr("198.51.100.66")
	for range 10 {
		if ok, _ := l.Allow(attacker); !ok {
			t.Fatal("the attacker's first requests refused")
		}
	}
	refusals := 0
	for i := range 200_000 {
		l.Allow(addr(uint32(i)))
		if i%100 == 99 {
			if ok, _ := l.Allow(attacker); ok {
				t.Fatalf("after %d other addresses the attacker got a token", i+1)
			}
			refusals++
		}
	}
	if n := l.buckets.Len(); n > maxBuckets {
		t.Fatalf("%d buckets kept, bound is %d", n, maxBuckets)
	}
	if refusals != 2000 {
		t.Fatalf("%d refusals checked", refusals)
	}
}

func TestLimiter_per_period(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := New(Config{Limit: 20, Period: time.Hour, Now: clk.now})
	ip := netip.MustParseAddr("192.0.2.1")
	for i := range 20 {
		if ok, _ := l.Allow(ip); !ok {
			t.Fatalf("request %d of 20 an hour refused", i+1)
		}
	}
	// One token every 3 minutes.
	if ok, wait := l.Allow(ip); ok || wait != 3*time.Minute {
		t.Fatalf("21st: ok=%v wait=%v, want refused for 3m", ok, wait)
	}
	clk.t = clk.t.Add(3 * time.Minute)
	if ok, _ := l.Allow(ip); !ok {
		t.Fatal("no token after 3 minutes")
	}
}

// IPv6 clients share a bucket per prefix (a /64 by default): a client
// that owns a /64 cannot pick a fresh bucket per request. IPv4 clients
// have one each.
func TestLimiter_keys(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prefix int
		a, b   string
		shared bool
	}{
		{"ipv6_same_64", 0, "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"ipv6_other_64", 0, "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"ipv6_same_56", 56, "2001:db8:1:2::1", "2001:db8:1:ff::1", true},
		{"ipv6_per_address", 128, "2001:db8:1:2::1", "2001:db8:1:2::2", false},
		{"ipv6_zone_ignored", 128, "fe80::1%eth0", "fe80::1%eth1", true},
		{"ipv4_per_address", 0, "192.0.2.1", "192.0.2.2", false},
		{"ipv4_mapped_is_ipv4", 0, "::ffff:192.0.2.1", "192.0.2.1", true},
		{"ipv4_mapped_not_in_a_64", 0, "::ffff:192.0.2.1", "::ffff:192.0.2.2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Config{Limit: 1, IPv6Prefix: tc.prefix, Now: (&fakeClock{t: time.Unix(1_700_000_000, 0)}).now})
			if ok, _ := l.Allow(netip.MustParseAddr(tc.a)); !ok {
				t.Fatal("first request refused")
			}
			ok, _ := l.Allow(netip.MustParseAddr(tc.b))
			if shared := !ok; shared != tc.shared {
				t.Fatalf("%s and %s share a bucket: %v, want %v", tc.a, tc.b, shared, tc.shared)
			}
		})
	}
}

// AllowAll takes from every limiter or from none.
func TestAllowAll(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	perMinute := New(Config{Limit: 3, Now: clk.now})
	perHour := New(Config{Limit: 2, Period: time.Hour, Now: clk.now})
	ip := netip.MustParseAddr("192.0.2.1")
	for range 2 {
		if ok, _ := AllowAll(ip, perMinute, perHour, nil); !ok {
			t.Fatal("refused within both limits")
		}
	}
	// The hourly limit refuses: the per-minute bucket keeps its token.
	if ok, wait := AllowAll(ip, perMinute, perHour); ok || wait != 30*time.Minute {
		t.Fatalf("past the hourly limit: ok=%v wait=%v, want 30m", ok, wait)
	}
	if ok, _ := perMinute.Allow(ip); !ok {
		t.Fatal("a refused request took a token from the other limiter")
	}
	// Both refuse: the longer wait.
	if ok, wait := AllowAll(ip, perMinute, perHour); ok || wait != 30*time.Minute {
		t.Fatalf("both refuse: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := AllowAll(ip); !ok {
		t.Fatal("no limiter refused")
	}
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name   string
		remote string
		xff    []string
		want   string
	}{
		{name: "direct_peer", remote: "192.0.2.7:5555", want: "192.0.2.7"},
		{name: "untrusted_peer_cannot_spoof", remote: "192.0.2.7:5555", xff: []string{"203.0.113.9"}, want: "192.0.2.7"},
		{name: "trusted_proxy", remote: "10.1.2.3:80", xff: []string{"203.0.113.9"}, want: "203.0.113.9"},
		{name: "client_prepended_entries_ignored", remote: "10.1.2.3:80", xff: []string{"1.1.1.1, 203.0.113.9"}, want: "203.0.113.9"},
		{name: "chain_of_trusted_proxies", remote: "10.1.2.3:80", xff: []string{"203.0.113.9, 10.9.9.9"}, want: "203.0.113.9"},
		{name: "several_headers", remote: "10.1.2.3:80", xff: []string{"1.1.1.1", "203.0.113.9"}, want: "203.0.113.9"},
		{name: "malformed_entry_stops_at_last_good_hop", remote: "10.1.2.3:80", xff: []string{"garbage"}, want: "10.1.2.3"},
		{name: "trusted_proxy_without_header", remote: "10.1.2.3:80", want: "10.1.2.3"},
		{name: "ipv6_peer", remote: "[2001:db8::1]:443", want: "2001:db8::1"},
		{name: "ipv4_mapped_peer", remote: "[::ffff:192.0.2.7]:1", want: "192.0.2.7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := ClientIP(r, trusted); got.String() != tc.want {
				t.Fatalf("ClientIP = %s, want %s", got, tc.want)
			}
		})
	}
}
