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
// forgotten: a flood of new addresses evicts only the quietest clients
// rather than resetting everybody, and a client that keeps sending (an
// attacker at its limit) is always among the most recent, so it stays
// limited however many other addresses come and go.
const maxBuckets = 100_000

// DefaultIPv6Prefix is the length of the prefix that keys IPv6 clients by
// default. A single host or home network is usually given a whole /64
// (RFC 6177; SLAAC needs one), so keying by address would let one client
// pick a fresh bucket for every request from 2^64 addresses.
const DefaultIPv6Prefix = 64

// Config configures a Limiter.
type Config struct {
	// Limit is the number of requests a client may make per Period: a
	// bucket of Limit tokens that refills continuously over the period.
	// 0 or less means no limit.
	Limit int
	// Period is the time the bucket takes to refill; 0 means a minute.
	Period time.Duration
	// IPv6Prefix is the prefix length by which IPv6 clients share one
	// bucket; 0 means DefaultIPv6Prefix, 128 one bucket per address. IPv4
	// clients have one bucket per address.
	IPv6Prefix int
	// Now is the clock; nil means the real one.
	Now func() time.Time
}

// Limiter grants each client IP (or IPv6 prefix) up to Limit requests per
// Period: a rate.Limiter of Limit/Period with a burst of Limit. Refused
// requests take no token. It is safe for concurrent use.
type Limiter struct {
	perSec   rate.Limit
	burst    int
	v6prefix int
	now      func() time.Time

	// mu guards buckets and serialises Allow, as with the hand-written
	// buckets before: a client's concurrent first requests share one
	// bucket, and the wait reported is the one of the refusal. (Releasing
	// it before the bucket's own lock measured no faster on two cores.)
	mu      sync.Mutex
	buckets *simplelru.LRU[netip.Addr, *rate.Limiter]
}

// New returns a limiter configured by c; a Limit of 0 or less returns nil,
// and a nil *Limiter allows everything.
func New(c Config) *Limiter {
	if c.Limit <= 0 {
		return nil
	}
	if c.Period <= 0 {
		c.Period = time.Minute
	}
	if c.IPv6Prefix <= 0 || c.IPv6Prefix > 128 {
		c.IPv6Prefix = DefaultIPv6Prefix
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	buckets, err := simplelru.NewLRU[netip.Addr, *rate.Limiter](maxBuckets, nil)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &Limiter{
		perSec:   rate.Limit(float64(c.Limit) / c.Period.Seconds()),
		burst:    c.Limit,
		v6prefix: c.IPv6Prefix,
		now:      c.Now,
		buckets:  buckets,
	}
}

// key is the bucket of a client: the address itself for IPv4 (mapped
// forms included), its prefix for IPv6.
func (l *Limiter) key(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() && l.v6prefix < 128 {
		if p, err := a.Prefix(l.v6prefix); err == nil {
			return p.Addr()
		}
	}
	return a
}

// bucket returns the bucket of key, made full when new. l.mu must be held.
func (l *Limiter) bucket(key netip.Addr) *rate.Limiter {
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.perSec, l.burst)
		l.buckets.Add(key, b)
	}
	return b
}

// wait is how long until b has a token again. l.mu must be held.
func (l *Limiter) wait(b *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - b.TokensAt(now)
	return time.Duration(missing / float64(l.perSec) * float64(time.Second))
}

// Allow takes a token for the client at addr. When none is left it
// reports false and how long until one will be.
func (l *Limiter) Allow(addr netip.Addr) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(l.key(addr))
	// AllowN takes nothing when it refuses.
	if b.AllowN(now, 1) {
		return true, 0
	}
	return false, l.wait(b, now)
}

// AllowAll takes a token for the client at addr from every limiter, or
// from none of them: a request that one refuses takes nothing from the
// others. When refused it reports the longest wait among those that
// refuse. Nil limiters allow everything. The limiters are locked in the
// order given; every caller must give them in one order.
func AllowAll(addr netip.Addr, limiters ...*Limiter) (bool, time.Duration) {
	type held struct {
		l   *Limiter
		b   *rate.Limiter
		now time.Time
	}
	taken := make([]held, 0, len(limiters))
	defer func() {
		for _, h := range taken {
			h.l.mu.Unlock()
		}
	}()
	for _, l := range limiters {
		if l == nil {
			continue
		}
		now := l.now()
		l.mu.Lock()
		taken = append(taken, held{l: l, b: l.bucket(l.key(addr)), now: now})
	}
	refused, wait := false, time.Duration(0)
	for _, h := range taken {
		if h.b.TokensAt(h.now) < 1 {
			refused, wait = true, max(wait, h.l.wait(h.b, h.now))
		}
	}
	if refused {
		return false, wait
	}
	for _, h := range taken {
		if !h.b.AllowN(h.now, 1) {
			// Cannot happen: the token was there and the lock is held.
			return false, h.l.wait(h.b, h.now)
		}
	}
	return true, 0
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
