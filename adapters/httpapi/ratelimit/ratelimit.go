// Package ratelimit limits requests per client IP with token buckets, and
// finds the client IP of a request behind trusted proxies. It lives in the
// HTTP adapter because it is about connections, not about users: per-email
// login throttling is a domain rule kept in the database instead.
//
// The buckets live in process memory by default; given a
// ports.RateLimitStore (Config.Store) they live there instead, shared by
// every node. The keying of clients (IPv6 prefixes) stays here either way.
package ratelimit

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/userd/userd/ports"
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
	// Now is the clock; nil means the real one. A Store keeps its own.
	Now func() time.Time
	// Store, when set, keeps the buckets instead of process memory, so
	// that every node sharing it draws on one budget.
	Store ports.RateLimitStore
	// Name tells this limiter's buckets from the others' in the Store
	// ("auth", "register"); two limiters with one Name share buckets.
	Name string
	// FailClosed refuses a request when the Store fails; by default
	// (false) the request is admitted: the limit is a guard, not the
	// service.
	FailClosed bool
}

// Limiter grants each client IP (or IPv6 prefix) up to Limit requests per
// Period: a rate.Limiter of Limit/Period with a burst of Limit. Refused
// requests take no token. It is safe for concurrent use.
type Limiter struct {
	perSec   rate.Limit
	burst    int
	v6prefix int
	now      func() time.Time

	// store, when set, holds the buckets; the fields below are then
	// unused.
	store      ports.RateLimitStore
	bucketName ports.RateLimitBucket
	failClosed bool

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
		perSec:     rate.Limit(float64(c.Limit) / c.Period.Seconds()),
		burst:      c.Limit,
		v6prefix:   c.IPv6Prefix,
		now:        c.Now,
		buckets:    buckets,
		store:      c.Store,
		bucketName: ports.RateLimitBucket{Limiter: c.Name, Limit: c.Limit, Period: c.Period},
		failClosed: c.FailClosed,
	}
}

// remoteBucket is the client's bucket in the store.
func (l *Limiter) remoteBucket(addr netip.Addr) ports.RateLimitBucket {
	b := l.bucketName
	k := l.key(addr)
	if k.Is6() && l.v6prefix < 128 {
		b.Client = netip.PrefixFrom(k, l.v6prefix).String()
	} else {
		b.Client = k.String()
	}
	return b
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
// reports false and how long until one will be. A store's failure is
// answered as Config.FailClosed says; Take reports it too.
func (l *Limiter) Allow(addr netip.Addr) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	if l.store != nil {
		ok, wait, _ := Take(context.Background(), addr, l)
		return ok, wait
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
// order given; every caller must give them in one order. It is Take
// without a context, the store's failure answered as the limiters say.
func AllowAll(addr netip.Addr, limiters ...*Limiter) (bool, time.Duration) {
	ok, wait, _ := Take(context.Background(), addr, limiters...)
	return ok, wait
}

// Take is AllowAll for a request: the limiters backed by a store take
// their tokens in one call of its TakeAll, under ctx, so that "every
// limiter or none" holds across nodes too. Limiters backed by a store in
// one call must share it (httpapi gives every limiter the same one).
// When the store fails, err says so, and ok is false (with no wait) if
// one of those limiters is FailClosed, true otherwise: the caller logs
// and counts the failure, and answers a refusal without a wait as the
// store's unavailability rather than the client's excess.
func Take(ctx context.Context, addr netip.Addr, limiters ...*Limiter) (ok bool, wait time.Duration, err error) {
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
	var (
		store      ports.RateLimitStore
		remote     []ports.RateLimitBucket
		failClosed bool
	)
	for _, l := range limiters {
		if l == nil {
			continue
		}
		if l.store != nil {
			store = l.store
			remote = append(remote, l.remoteBucket(addr))
			failClosed = failClosed || l.failClosed
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
		return false, wait, nil
	}
	var storeErr error
	if len(remote) > 0 {
		// The memory buckets stay locked meanwhile, so that what they
		// hold cannot change between the check above and the take below
		// (only a mix of both kinds of limiter pays for that).
		ok, wait, err := store.TakeAll(ctx, remote)
		switch {
		case err != nil && failClosed:
			return false, 0, err
		case err != nil:
			storeErr = err // failing open: the memory limiters still count
		case !ok:
			return false, wait, nil
		}
	}
	for _, h := range taken {
		if !h.b.AllowN(h.now, 1) {
			// Cannot happen: the token was there and the lock is held.
			return false, h.l.wait(h.b, h.now), storeErr
		}
	}
	return true, 0, storeErr
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
