package application

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// countingCacheMetrics counts what the cache reports.
type countingCacheMetrics struct{ hits, misses, evictions atomic.Int64 }

func (m *countingCacheMetrics) AccountCacheHit()      { m.hits.Add(1) }
func (m *countingCacheMetrics) AccountCacheMiss()     { m.misses.Add(1) }
func (m *countingCacheMetrics) AccountCacheEviction() { m.evictions.Add(1) }

func cacheUser(id string) domain.User {
	return domain.User{ID: domain.UserID(id), Name: id, Email: domain.Email(id + "@example.com"),
		Profiles: domain.Profiles{domain.ProfileCustomer}}
}

// store gets id's ticket (a miss) and puts u with it.
func store(c *accountCache, u domain.User) {
	_, t, _ := c.get(u.ID)
	c.put(u, t)
}

func TestAccountCache_least_recently_used_goes_first(t *testing.T) {
	t.Parallel()
	m := &countingCacheMetrics{}
	c := newAccountCache(2, true, m)
	store(c, cacheUser("a"))
	store(c, cacheUser("b"))
	if _, _, ok := c.get("a"); !ok { // a is now the most recently used
		t.Fatal("a not cached")
	}
	store(c, cacheUser("c")) // evicts b
	if _, _, ok := c.get("b"); ok {
		t.Error("b, the least recently used, is still cached")
	}
	for _, id := range []domain.UserID{"a", "c"} {
		if u, _, ok := c.get(id); !ok || u.ID != id {
			t.Errorf("%s: cached %v, %+v", id, ok, u)
		}
	}
	if c.len() != 2 || m.evictions.Load() != 1 || m.hits.Load() != 3 || m.misses.Load() != 4 {
		t.Errorf("len %d, evictions %d hits %d misses %d; want 2, 1, 3, 4",
			c.len(), m.evictions.Load(), m.hits.Load(), m.misses.Load())
	}
}

// A read that began before a change and ends after its drop must not put
// the old account back.
func TestAccountCache_read_older_than_a_drop_is_not_stored(t *testing.T) {
	t.Parallel()
	c := newAccountCache(10, true, nil)
	old := cacheUser("a")
	_, ticket, _ := c.get(old.ID) // the read begins
	c.drop(old.ID)                // a change commits and drops
	c.put(old, ticket)            // the read ends with the old account
	if _, _, ok := c.get(old.ID); ok {
		t.Fatal("the account read before the drop was stored after it")
	}
	store(c, old) // a read begun after the drop is stored
	if _, _, ok := c.get(old.ID); !ok {
		t.Fatal("a read begun after the drop was not stored")
	}
	c.drop(old.ID)
	if _, _, ok := c.get(old.ID); ok {
		t.Fatal("drop left the account cached")
	}
}

func TestAccountCache_channel_down_empties_and_stores_nothing(t *testing.T) {
	t.Parallel()
	c := newAccountCache(10, false, nil)
	store(c, cacheUser("a"))
	if c.len() != 0 {
		t.Fatal("stored before the channel was up")
	}
	c.setLive(true)
	store(c, cacheUser("a"))
	_, before, _ := c.get("b") // a read under way when the channel drops
	c.setLive(false)
	if c.len() != 0 {
		t.Fatalf("%d accounts cached after the channel dropped", c.len())
	}
	store(c, cacheUser("c"))
	c.setLive(true)
	c.put(cacheUser("b"), before) // begun before the drop: may have missed a change
	if c.len() != 0 {
		t.Fatalf("%d accounts cached: a read begun while the channel was down was stored", c.len())
	}
	store(c, cacheUser("b"))
	if c.len() != 1 {
		t.Fatal("not storing once the channel was up again")
	}
}

// fakeAccountChanges hands the test the callbacks the cache registers.
type fakeAccountChanges struct {
	changed func([]domain.UserID)
	live    func(bool)
}

func (f *fakeAccountChanges) SubscribeAccounts(changed func([]domain.UserID), live func(bool)) {
	f.changed, f.live = changed, live
}

// cachedEnv is a memory store's users behind the cache, with a channel
// to other nodes, up.
func cachedEnv(t *testing.T) (ports.Stores, *memory.UserRepository, *fakeAccountChanges, domain.User) {
	t.Helper()
	mem := memory.NewStore()
	ch := &fakeAccountChanges{}
	st := accountCaching(ports.Stores{Users: mem.Users(), Tx: mem, AccountChanges: ch}, 10, nil)
	ch.live(true)
	u := cacheUser("0123456789abcdef01234567")
	u.CreatedAt = time.Unix(1_800_000_000, 0).UTC()
	if err := mem.Users().Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return st, mem.Users(), ch, u
}

// rename changes the account in the store behind the cache's back, as
// another node does.
func rename(t *testing.T, users *memory.UserRepository, id domain.UserID, name string) {
	t.Helper()
	if _, err := users.Update(context.Background(), id, func(u *domain.User) error { u.Name = name; return nil }); err != nil {
		t.Fatal(err)
	}
}

func callerName(t *testing.T, st ports.Stores, id domain.UserID) string {
	t.Helper()
	u, err := readCaller(context.Background(), st.Users, id, admitsAll)
	if err != nil {
		t.Fatal(err)
	}
	return u.Name
}

func TestCachingUsers_changes_drop_the_account(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, behind, ch, u := cachedEnv(t)
	callerName(t, st, u.ID)
	rename(t, behind, u.ID, "elsewhere")
	if got := callerName(t, st, u.ID); got != u.Name {
		t.Fatalf("second read %q: not served by the cache", got)
	}
	// Another node's change, told by the channel.
	ch.changed([]domain.UserID{u.ID})
	if got := callerName(t, st, u.ID); got != "elsewhere" {
		t.Fatalf("after the channel's drop: %q", got)
	}
	// This node's change, through the repository.
	if _, err := st.Users.Update(ctx, u.ID, func(u *domain.User) error { u.Name = "here"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := callerName(t, st, u.ID); got != "here" {
		t.Fatalf("after Update: %q", got)
	}
	if err := st.Users.Delete(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := readCaller(ctx, st.Users, u.ID, admitsAll); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("after Delete: %v, want ErrUserNotFound", err)
	}
}

// A change made in a transaction is dropped again once the transaction
// ended: a read between the change and the commit found the old account.
func TestCachingUsers_change_in_a_transaction_drops_after_it(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _, _, u := cachedEnv(t)
	c := st.Users.(*cachingUsers).cache
	err := st.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if _, err := st.Users.Update(ctx, u.ID, func(u *domain.User) error { u.Disabled = true; return nil }); err != nil {
			return err
		}
		if _, err := readCaller(ctx, st.Users, u.ID, admitsAll); err != nil { // inside: not cached
			return err
		}
		if c.len() != 0 {
			t.Error("a read inside the transaction was cached")
		}
		store(c, u) // another request's read, of the account as committed before
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readCaller(ctx, st.Users, u.ID, admitsAll)
	if err != nil || !got.Disabled {
		t.Fatalf("after the transaction: %+v, %v; want the disabled account", got, err)
	}
}

func TestCachingUsers_channel_down_reads_the_store(t *testing.T) {
	t.Parallel()
	st, behind, ch, u := cachedEnv(t)
	callerName(t, st, u.ID)
	ch.live(false)
	rename(t, behind, u.ID, "while down")
	if got := callerName(t, st, u.ID); got != "while down" {
		t.Fatalf("with the channel down: %q, want the store's", got)
	}
	if n := st.Users.(*cachingUsers).cache.len(); n != 0 {
		t.Fatalf("%d accounts cached with the channel down", n)
	}
}

func TestAccountCaching_off(t *testing.T) {
	t.Parallel()
	mem := memory.NewStore()
	st := accountCaching(ports.Stores{Users: mem.Users(), Tx: mem}, -1, nil)
	u := cacheUser("0123456789abcdef01234567")
	if err := mem.Users().Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	callerName(t, st, u.ID)
	rename(t, mem.Users(), u.ID, "changed")
	if got := callerName(t, st, u.ID); got != "changed" {
		t.Fatalf("cache off: %q, want the store's", got)
	}
}

func admitsAll(domain.User) bool { return true }

// A cached account that would refuse the caller is read again: a lag of
// the cache must never refuse what the store admits.
func TestCachingUsers_refusal_is_read_again(t *testing.T) {
	t.Parallel()
	st, behind, _, u := cachedEnv(t)
	callerName(t, st, u.ID)
	rename(t, behind, u.ID, "promoted elsewhere") // not yet told to this node
	notTheOld := func(got domain.User) bool { return got.Name != u.Name }
	got, err := readCaller(context.Background(), st.Users, u.ID, notTheOld)
	if err != nil || got.Name != "promoted elsewhere" {
		t.Fatalf("got %q, %v; want the store's account", got.Name, err)
	}
	if got := callerName(t, st, u.ID); got != "promoted elsewhere" {
		t.Fatalf("the account read again was not cached: %q", got)
	}
}
