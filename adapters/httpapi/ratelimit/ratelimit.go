// Package ratelimit limits requests per client IP with token buckets, and
// finds the client IP of a request behind trusted proxies. It lives in the
// HTTP adapter because it is about connections, not about users: per-email
// login throttling is a domain rule kept in the database instead.
package ratelimit

import (
	"math"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// maxBuckets bounds the memory one limiter may use. Full buckets are
// dropped first: a client absent for a whole refill period is
// indistinguishable from a new one.
const maxBuckets = 100_000

// Limiter grants each key up to limit requests a minute: a bucket of limit
// tokens that refills continuously over the minute. Refused requests take
// no token. It is safe for concurrent use.
type Limiter struct {
	limit  float64
	perSec float64
	now    func() time.Time

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a limiter of limit requests a minute per key; limit <= 0
// returns nil, and a nil *Limiter allows everything. now may be nil for the
// real clock.
func New(limit int, now func() time.Time) *Limiter {
	if limit <= 0 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{
		limit:   float64(limit),
		perSec:  float64(limit) / 60,
		now:     now,
		buckets: make(map[netip.Addr]*bucket),
	}
}

// Allow takes a token for key. When none is left it reports false and how
// long until one will be.
func (l *Limiter) Allow(key netip.Addr) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.sweep(now)
		}
		b = &bucket{tokens: l.limit, last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(l.limit, b.tokens+now.Sub(b.last).Seconds()*l.perSec)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perSec * float64(time.Second))
	return false, wait
}

// sweep drops the buckets that have refilled completely, and if that is
// not enough, all of them: under a flood of distinct addresses the limiter
// must not grow without bound.
func (l *Limiter) sweep(now time.Time) {
	full := time.Duration(l.limit / l.perSec * float64(time.Second))
	for k, b := range l.buckets {
		if now.Sub(b.last) >= full {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= maxBuckets {
		clear(l.buckets)
	}
}

// ClientIP returns the address of the client that sent r: the TCP peer,
// unless the peer is a trusted proxy, in which case the X-Forwarded-For
// entries are read from the right and the first one not itself a trusted
// proxy wins. Entries left of that are written by the client and ignored.
func ClientIP(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	var addr netip.Addr
	if err == nil {
		addr = peer.Addr().Unmap()
	} else if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		addr = a.Unmap()
	}
	if !isTrusted(addr, trusted) {
		return addr
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			hop, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				// A malformed entry ends the chain we can trust.
				return addr
			}
			hop = hop.Unmap()
			if !isTrusted(hop, trusted) {
				return hop
			}
			addr = hop
		}
	}
	return addr
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
