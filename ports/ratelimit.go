package ports

import (
	"context"
	"time"
)

// RateLimitBucket names one client's bucket of one per-IP limit, and the
// limit's shape: Limit requests per Period, with a burst of Limit.
type RateLimitBucket struct {
	// Limiter names the limit ("auth", "register"): buckets of different
	// limits never share a token.
	Limiter string
	// Client is the client's key within the limit: an IPv4 address, or
	// the prefix of an IPv6 one (the keying is the caller's).
	Client string
	// Limit is the number of requests per Period, and the burst; positive.
	Limit int
	// Period is the time an empty bucket takes to fill; positive.
	Period time.Duration
}

// RateLimitStore keeps the per-IP limits' buckets outside the process
// (the driven side of the HTTP adapter's limiter), so that every node of
// a deployment draws on one budget. The in-memory limiter needs none.
type RateLimitStore interface {
	// TakeAll takes one token from every bucket, or from none of them, in
	// one atomic step for every node sharing the store. When one bucket
	// has no token left it takes nothing, reports false and the longest
	// wait until the refusing buckets have a token again. An error (the
	// store did not answer in time, or at all) means nothing is known to
	// have been taken; the caller decides whether to admit the request.
	TakeAll(ctx context.Context, buckets []RateLimitBucket) (ok bool, wait time.Duration, err error)
}
