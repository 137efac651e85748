package ports

import "context"

// SessionEndings carries the ends of sessions between the nodes that serve
// one store, so that each can refuse the access tokens of a session that
// another ended, without reading the store per request. A single-node
// store (SQLite) needs none: the application keeps the sessions it ends
// itself.
type SessionEndings interface {
	// Publish tells the other nodes that the sessions (refresh-family ids)
	// ended. It is called after the store committed their end; a store
	// whose messages may be lost (NOTIFY without a listener, say) catches
	// up from the store itself, so an error here is logged, not fatal.
	Publish(ctx context.Context, sids []string) error
	// Subscribe registers deliver, called with the sessions other nodes
	// ended (and those a catch-up finds), from the adapter's goroutine.
	// It is called before the adapter starts, and does no I/O.
	Subscribe(deliver func(sids []string))
}
