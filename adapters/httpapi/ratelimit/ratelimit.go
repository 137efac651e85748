// Package ratelimit limits requests per client IP with token buckets, and
// finds the client IP of a request behind trusted proxies. It lives in the
// HTTP adapter because it is about connections, not about users: per-email
// login throttling is a domain rule kept in the database instead.
package ratelimit

import (
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// maxBuckets bounds the memory one limiter may use (about 200 bytes a
// client). When it is reached, the client seen least recently is
// forgotten: one absent for a whole refill period has a full bucket and is
// indistinguishable from a new one, and a flood of new addresses evicts
// only the quietest clients rather than resetting everybody.
const maxBuckets = 100_000

// Limiter grants each key up to limit requests a minute: a bucket of limit
// tokens that refills continuously over the minute (a rate.Limiter of
// limit/60 a second with a burst of limit). Refused requests take no
// token. It is safe for concurrent use.
type Limiter struct {
	perSec rate.Limit
	burst  int
	now    func() time.Time

	// mu guards buckets and serialises Allow, as with the hand-written
	// buckets before: a client's concurrent first requests share one
	// bucket, and the wait reported is the one of the refusal. (Releasing
	// it before the bucket's own lock measured no faster on two cores.)
	mu      sync.Mutex
	buckets *simplelru.LRU[netip.Addr, *rate.Limiter]
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
	buckets, err := simplelru.NewLRU[netip.Addr, *rate.Limiter](maxBuckets, nil)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Limiter{
		perSec:  rate.Limit(float64(limit) / 60),
		burst:   limit,
		now:     now,
		buckets: buckets,
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
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.perSec, l.burst)
		l.buckets.Add(key, b)
	}
	// AllowN takes nothing when it refuses.
	if b.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - b.TokensAt(now)
	return false, time.Duration(missing / float64(l.perSec) * float64(time.Second))
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
