package application

import (
	"context"
	"sync"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// cachingUsers is the store's UserRepository with this node's account
// cache beside it: every change made through it (Update, Delete) drops the
// account from the cache once the change is committed, whichever use case
// made it, and caller serves signedIn's read from the cache. Every other
// read (the writes' own, an admin's of another user) goes to the store as
// before. New puts it in place of the store's repository for every
// service, and droppingTx in place of the store's Transactor, which tells
// it when a change made in a transaction committed.
type cachingUsers struct {
	ports.UserRepository
	// cache is nil when the cache is off (USERD_ACCOUNT_CACHE_SIZE=0).
	cache *accountCache
}

var _ ports.UserRepository = (*cachingUsers)(nil)

// Update implements ports.UserRepository. The entry is dropped whatever
// the outcome: an error after the commit (a lost connection, say) leaves
// the change unknown, and a drop too many costs one read.
func (r *cachingUsers) Update(ctx context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error) {
	u, err := r.UserRepository.Update(ctx, id, fn)
	r.changed(ctx, id)
	return u, err
}

// Delete implements ports.UserRepository, dropping the entry as Update
// does.
func (r *cachingUsers) Delete(ctx context.Context, id domain.UserID) error {
	err := r.UserRepository.Delete(ctx, id)
	r.changed(ctx, id)
	return err
}

// changed drops the account now and, inside a transaction, once more when
// the transaction ends: a read between this drop and the commit would
// find the old account and store it again.
func (r *cachingUsers) changed(ctx context.Context, id domain.UserID) {
	if r.cache == nil {
		return
	}
	r.cache.drop(id)
	if p, ok := ctx.Value(pendingDropsKey{}).(*pendingDrops); ok {
		p.add(id)
	}
}

// caller returns the signed-in caller's account: from the cache when it
// holds it and admits the caller, otherwise read from the store (and
// kept, unless a change came meanwhile). A cached account that would
// refuse the caller is read again rather than trusted: the cache may lag
// a change of another node by up to a second, and a lag may let a
// request through for that second, as before a change's commit, but must
// never refuse a token the store would admit (a user promoted on another
// node, who signed in again there). Inside a transaction it reads the
// transaction's view, never the cache.
func (r *cachingUsers) caller(ctx context.Context, id domain.UserID, admits func(domain.User) bool) (domain.User, error) {
	if r.cache == nil || ctx.Value(pendingDropsKey{}) != nil {
		return r.ByID(ctx, id)
	}
	u, t, ok := r.cache.get(id)
	if ok && admits(u) {
		return u, nil
	}
	if ok {
		t = r.cache.reread(id)
	}
	u, err := r.ByID(ctx, id)
	if err == nil {
		r.cache.put(u, t)
	}
	return u, err
}

// readCaller is signedIn's read of the caller's account: through the
// cache when users is New's cachingUsers (every service's), straight from
// users otherwise. admits tells whether an account admits the caller.
func readCaller(ctx context.Context, users ports.UserRepository, id domain.UserID, admits func(domain.User) bool) (domain.User, error) {
	if c, ok := users.(*cachingUsers); ok {
		return c.caller(ctx, id, admits)
	}
	return users.ByID(ctx, id)
}

// pendingDropsKey is the context key of the accounts a transaction of
// droppingTx changed.
type pendingDropsKey struct{}

// pendingDrops are the accounts changed in one transaction, dropped again
// when it ends.
type pendingDrops struct {
	mu  sync.Mutex
	ids []domain.UserID
}

func (p *pendingDrops) add(id domain.UserID) {
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
}

// droppingTx is the store's Transactor, dropping from the cache, once a
// transaction ended (committed or not), the accounts changed in it.
type droppingTx struct {
	ports.Transactor
	cache *accountCache
}

// WithinTx implements ports.Transactor.
func (t droppingTx) WithinTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if t.cache == nil || ctx.Value(pendingDropsKey{}) != nil {
		return t.Transactor.WithinTx(ctx, fn) // off, or joining the transaction under way
	}
	p := &pendingDrops{}
	err := t.Transactor.WithinTx(context.WithValue(ctx, pendingDropsKey{}, p), fn)
	p.mu.Lock()
	ids := p.ids
	p.mu.Unlock()
	t.cache.drop(ids...)
	return err
}

// accountCaching puts the cache in front of st's users and transactions
// and has it hear of the changes of the other nodes. size 0 turns it off.
func accountCaching(st ports.Stores, size int, metrics ports.AccountCacheMetrics) ports.Stores {
	var cache *accountCache
	if size > 0 {
		cache = newAccountCache(size, st.AccountChanges == nil, metrics)
		if st.AccountChanges != nil {
			st.AccountChanges.SubscribeAccounts(func(ids []domain.UserID) { cache.drop(ids...) }, cache.setLive)
		}
	}
	st.Users = &cachingUsers{UserRepository: st.Users, cache: cache}
	st.Tx = droppingTx{Transactor: st.Tx, cache: cache}
	return st
}
