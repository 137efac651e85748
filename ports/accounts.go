package ports

import "github.com/userd/userd/domain"

// AccountChanges carries the changes of accounts between the nodes that
// serve one store, so that each can drop the accounts another changed
// from its account cache. The store records a change in the transaction
// that makes it, and tells the other nodes only once it commits; the
// node that made the change drops its own entry itself. A store of one
// process needs none.
type AccountChanges interface {
	// SubscribeAccounts registers changed, called with the accounts
	// changed (by any node, this one included, and those a catch-up
	// finds), and live, called with false when the adapter can no longer
	// tell of changes (its channel dropped) and with true once it can
	// again: what changed between is then in the store, read by any
	// later read. Until its first live(true) the channel is not up. Both
	// are called from the adapter's goroutine. It is called before the
	// adapter starts, and does no I/O.
	SubscribeAccounts(changed func(ids []domain.UserID), live func(up bool))
}

// AccountCacheMetrics counts what the per-node account cache does.
// Cheap, safe for concurrent use, infallible.
type AccountCacheMetrics interface {
	// AccountCacheHit counts a signed-in request's account served from
	// the cache.
	AccountCacheHit()
	// AccountCacheMiss counts one read from the store instead.
	AccountCacheMiss()
	// AccountCacheEviction counts an entry evicted to make room (not one
	// dropped because its account changed).
	AccountCacheEviction()
}
