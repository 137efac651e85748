package application

import (
	"container/list"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// DefaultAccountCacheSize is the number of accounts a node keeps for its
// signed-in requests unless configured otherwise.
const DefaultAccountCacheSize = 10_000

// accountStripes is the number of drop counters of accountCache: a read
// may not store its account when a drop of any account of its stripe
// came while it read, so more stripes refuse fewer innocent reads, at 8
// bytes each.
const accountStripes = 256

// accountCache keeps, on one node, the accounts its signed-in requests
// read (signedIn), least recently used first out, so that most of them
// read no database. It is right only as long as every change of an
// account drops the entry: the node that makes a change drops it once the
// change committed (cachingUsers), the others when the store's channel
// tells them (ports.AccountChanges). While that channel is down the cache
// is empty and stores nothing: every request reads the store, as without
// a cache.
//
// A read that began before a change committed may return the old account
// after the drop; put refuses it. A read takes a ticket before it goes to
// the store (the epoch and the drop counter of its account's stripe), and
// put stores the account only if neither moved since: a drop (of any
// account of the stripe), a clear or the channel's coming back in the
// meantime refuses it, and the next request reads again.
type accountCache struct {
	size    int
	metrics ports.AccountCacheMetrics
	seed    maphash.Seed

	mu    sync.Mutex
	live  bool
	order *list.List // of *cachedAccount, the most recently used in front
	items map[domain.UserID]*list.Element
	// epoch moves with every clear and every change of live.
	epoch   uint64
	stripes [accountStripes]uint64
}

type cachedAccount struct {
	id   domain.UserID
	user domain.User
}

// accountTicket is what a read of the store took before it began.
type accountTicket struct {
	epoch, drops uint64
}

// newAccountCache returns a cache of size accounts, live (storing) at
// once unless a channel must tell it first. metrics may be nil.
func newAccountCache(size int, live bool, metrics ports.AccountCacheMetrics) *accountCache {
	if metrics == nil {
		metrics = noAccountCacheMetrics{}
	}
	return &accountCache{size: size, metrics: metrics, seed: maphash.MakeSeed(), live: live,
		order: list.New(), items: make(map[domain.UserID]*list.Element, size)}
}

func (c *accountCache) stripe(id domain.UserID) int {
	return int(maphash.String(c.seed, string(id)) % accountStripes)
}

// get returns the account of id when cached, a copy whose slices are
// its own; otherwise the ticket to store what the read it calls for
// returns. (A field of reference type added to domain.User is shared
// with the cache unless cloned here too.)
func (c *accountCache) get(id domain.UserID) (domain.User, accountTicket, bool) {
	c.mu.Lock()
	if e, ok := c.items[id]; ok {
		c.order.MoveToFront(e)
		u := e.Value.(*cachedAccount).user
		c.mu.Unlock()
		// The caller may change what it got: never the cached slice.
		u.Profiles = slices.Clone(u.Profiles)
		c.metrics.AccountCacheHit()
		return u, accountTicket{}, true
	}
	t := accountTicket{epoch: c.epoch, drops: c.stripes[c.stripe(id)]}
	c.mu.Unlock()
	c.metrics.AccountCacheMiss()
	return domain.User{}, t, false
}

// reread drops the account of id, which was cached but is to be read
// again, and returns the ticket of that read (counted as the hit get
// counted already).
func (c *accountCache) reread(id domain.UserID) accountTicket {
	c.drop(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	return accountTicket{epoch: c.epoch, drops: c.stripes[c.stripe(id)]}
}

// put stores u, the account read with ticket t, unless the cache is not
// live or a drop or clear came since t was taken.
func (c *accountCache) put(u domain.User, t accountTicket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || t.epoch != c.epoch || t.drops != c.stripes[c.stripe(u.ID)] {
		return
	}
	if e, ok := c.items[u.ID]; ok {
		e.Value.(*cachedAccount).user = u
		c.order.MoveToFront(e)
		return
	}
	c.items[u.ID] = c.order.PushFront(&cachedAccount{id: u.ID, user: u})
	if c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cachedAccount).id)
		c.metrics.AccountCacheEviction()
	}
}

// drop forgets the accounts, and refuses the reads of their stripes
// under way.
func (c *accountCache) drop(ids ...domain.UserID) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.stripes[c.stripe(id)]++
		if e, ok := c.items[id]; ok {
			c.order.Remove(e)
			delete(c.items, id)
		}
	}
}

// setLive turns the cache on (the channel is up) or off (down: it is
// emptied, and stores nothing until it is up again). Either way no read
// under way is stored: those begun while it was down may have missed a
// change.
func (c *accountCache) setLive(up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = up
	c.epoch++
	if !up {
		c.order.Init()
		clear(c.items)
	}
}

// len is the number of accounts cached.
func (c *accountCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

type noAccountCacheMetrics struct{}

func (noAccountCacheMetrics) AccountCacheHit()      {}
func (noAccountCacheMetrics) AccountCacheMiss()     {}
func (noAccountCacheMetrics) AccountCacheEviction() {}
