// Package redislimit keeps the buckets of the per-IP limits in Redis
// (ports.RateLimitStore), so that every node of a deployment draws on one
// budget: behind N nodes, an address gets the limit, not N times it.
//
// Each call is one Lua script (gcra.lua): a GCRA over every bucket of the
// request, all or none, atomic in Redis, timed by Redis' own clock. A
// bucket is one key, userd:rl:{<client>}:<limiter>, which expires as soon
// as the bucket would be full again. The braces make it a Redis Cluster
// hash tag: the buckets of one client share a slot, as a multi-key script
// needs.
package redislimit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/userd/userd/ports"
)

// DefaultTimeout bounds one call: a limiter is on the path of every login,
// so a Redis that hangs must cost a request tens of milliseconds, not
// seconds, before the request is admitted or refused as configured. A
// call to a Redis on the local network takes well under a millisecond
// (docs/performance.md).
const DefaultTimeout = 100 * time.Millisecond

// DefaultPrefix starts every key.
const DefaultPrefix = "userd:rl:"

//go:embed gcra.lua
var gcraSource string

var gcra = redis.NewScript(gcraSource)

// Options configure a Store.
type Options struct {
	// URL is redis://[user:password@]host:port/db (rediss:// for TLS).
	URL string
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Prefix starts every key; "" means DefaultPrefix.
	Prefix string
}

// Store is a ports.RateLimitStore over one Redis. It is safe for
// concurrent use.
type Store struct {
	client  *redis.Client
	timeout time.Duration
	prefix  string
}

var _ ports.RateLimitStore = (*Store)(nil)

// CheckURL reports whether u is a Redis URL New accepts, without saying
// what the URL holds: its password must not reach a log.
func CheckURL(u string) error {
	parsed, err := url.Parse(u)
	if err != nil {
		return errors.New("not a URL")
	}
	if parsed.Scheme != "redis" && parsed.Scheme != "rediss" {
		return errors.New("the scheme must be redis or rediss")
	}
	if _, err := redis.ParseURL(u); err != nil {
		return errors.New("not a Redis URL: redis://[user:password@]host:port/db")
	}
	return nil
}

// New returns a store for the Redis at opts.URL. It does not connect:
// Ping does, at start.
func New(opts Options) (*Store, error) {
	if err := CheckURL(opts.URL); err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	ro, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	// Every wait of the client is bounded by the call's timeout: the
	// context's deadline applies to the socket, and a connection that
	// cannot be made in that time is an error like any other.
	ro.ContextTimeoutEnabled = true
	ro.DialTimeout = opts.Timeout
	ro.ReadTimeout = opts.Timeout
	ro.WriteTimeout = opts.Timeout
	ro.PoolTimeout = opts.Timeout
	// A retry cannot fit in the timeout of a dead server; one of a stale
	// pooled connection (after a Redis restart) can.
	ro.MaxRetries = 1
	// The limiter needs no client-side identity in Redis' CLIENT LIST,
	// and CLIENT SETINFO fails (harmlessly, but noisily) on older Redis.
	ro.DisableIdentity = true
	return &Store{client: redis.NewClient(ro), timeout: opts.Timeout, prefix: opts.Prefix}, nil
}

// Ping checks that Redis answers, and loads the script.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	if err := gcra.Load(ctx, s.client).Err(); err != nil {
		return fmt.Errorf("redis script load: %w", err)
	}
	return nil
}

// Close closes the connections.
func (s *Store) Close() error {
	return s.client.Close()
}

// Key is the Redis key of a bucket.
func (s *Store) Key(b ports.RateLimitBucket) string {
	return s.prefix + "{" + b.Client + "}:" + b.Limiter
}

// TakeAll implements ports.RateLimitStore with one call of gcra.lua.
func (s *Store) TakeAll(ctx context.Context, buckets []ports.RateLimitBucket) (bool, time.Duration, error) {
	if len(buckets) == 0 {
		return true, 0, nil
	}
	keys := make([]string, len(buckets))
	args := make([]any, 0, 2*len(buckets))
	for i, b := range buckets {
		if b.Limit <= 0 || b.Period <= 0 {
			return false, 0, fmt.Errorf("rate limit %q: limit %d per %v", b.Limiter, b.Limit, b.Period)
		}
		keys[i] = s.Key(b)
		args = append(args, strconv.FormatInt(b.Period.Microseconds(), 10), strconv.Itoa(b.Limit))
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := gcra.Run(ctx, s.client, keys, args...).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("redis rate limit: %w", err)
	}
	if len(res) != 2 {
		return false, 0, errors.New("redis rate limit: unexpected reply")
	}
	if res[0] == 1 {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Microsecond, nil
}
