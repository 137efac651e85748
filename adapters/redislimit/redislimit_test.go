package redislimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/userd/userd/adapters/redislimit"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/userdproc"
)

// newStore returns a store on USERD_TEST_REDIS_URL whose keys start with
// a prefix of the test's own, deleted when the test ends, so that tests
// run in parallel on one Redis. Without the variable it skips, or fails
// when CI=true (CI must run every Redis test).
func newStore(t testing.TB) *redislimit.Store {
	t.Helper()
	url := userdproc.RedisURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "userd:test:" + hex.EncodeToString(b) + ":"
	s, err := redislimit.New(redislimit.Options{URL: url, Prefix: prefix, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		opts, _ := redis.ParseURL(url)
		c := redis.NewClient(opts)
		defer func() { _ = c.Close() }()
		ctx := context.Background()
		keys, err := c.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			err = c.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("clean up %s*: %v", prefix, err)
		}
		_ = s.Close()
	})
	return s
}

func bucket(limiter, client string, limit int, period time.Duration) ports.RateLimitBucket {
	return ports.RateLimitBucket{Limiter: limiter, Client: client, Limit: limit, Period: period}
}

func TestStore_refuses_past_the_limit_and_refused_requests_take_nothing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	b := bucket("auth", "192.0.2.1", 120, time.Minute)
	for i := range 120 {
		if ok, _, err := s.TakeAll(ctx, []ports.RateLimitBucket{b}); !ok || err != nil {
			t.Fatalf("request %d: ok=%v err=%v", i+1, ok, err)
		}
	}
	for range 5 {
		ok, wait, err := s.TakeAll(ctx, []ports.RateLimitBucket{b})
		// A token comes back every 500 ms; the first was taken a moment ago.
		if ok || err != nil || wait <= 0 || wait > 500*time.Millisecond {
			t.Fatalf("121st: ok=%v wait=%v err=%v, want refused for at most 500ms", ok, wait, err)
		}
	}
	// Other clients and other limiters have buckets of their own.
	for _, other := range []ports.RateLimitBucket{bucket("auth", "192.0.2.2", 120, time.Minute), bucket("register", "192.0.2.1", 120, time.Minute)} {
		if ok, _, err := s.TakeAll(ctx, []ports.RateLimitBucket{other}); !ok || err != nil {
			t.Fatalf("%+v: ok=%v err=%v", other, ok, err)
		}
	}
}

func TestStore_refills_one_token_per_interval(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	b := []ports.RateLimitBucket{bucket("auth", "2001:db8::/64", 2, 400*time.Millisecond)}
	for range 2 {
		if ok, _, err := s.TakeAll(ctx, b); !ok || err != nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
	ok, wait, err := s.TakeAll(ctx, b)
	if ok || err != nil || wait <= 0 || wait > 200*time.Millisecond {
		t.Fatalf("third: ok=%v wait=%v err=%v", ok, wait, err)
	}
	// Refused requests took nothing: after the wait, one token and one only.
	time.Sleep(wait + 5*time.Millisecond)
	if ok, _, err := s.TakeAll(ctx, b); !ok || err != nil {
		t.Fatalf("after %v: ok=%v err=%v", wait, ok, err)
	}
	if ok, _, _ := s.TakeAll(ctx, b); ok {
		t.Fatal("more than one token came back")
	}
}

// A request takes from every bucket or none: the register bucket, empty,
// refuses, and the auth bucket keeps its token.
func TestStore_takes_from_every_bucket_or_none(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	auth := bucket("auth", "198.51.100.7", 3, time.Minute)
	reg := bucket("register", "198.51.100.7", 1, time.Hour)
	if ok, _, err := s.TakeAll(ctx, []ports.RateLimitBucket{auth, reg}); !ok || err != nil {
		t.Fatalf("first: ok=%v err=%v", ok, err)
	}
	for range 5 {
		ok, wait, err := s.TakeAll(ctx, []ports.RateLimitBucket{auth, reg})
		// The longest wait is the register bucket's: an hour, less a moment.
		if ok || err != nil || wait < 59*time.Minute || wait > time.Hour {
			t.Fatalf("second: ok=%v wait=%v err=%v", ok, wait, err)
		}
	}
	// The auth bucket lost one token only: two remain.
	for i := range 2 {
		if ok, _, err := s.TakeAll(ctx, []ports.RateLimitBucket{auth}); !ok || err != nil {
			t.Fatalf("auth %d: ok=%v err=%v", i, ok, err)
		}
	}
	if ok, _, _ := s.TakeAll(ctx, []ports.RateLimitBucket{auth}); ok {
		t.Fatal("auth bucket held more than its limit")
	}
}

// Concurrent requests from many clients of one Redis (the nodes) are
// admitted up to the limit exactly.
func TestStore_is_atomic_under_concurrency(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := []ports.RateLimitBucket{bucket("auth", "203.0.113.9", 25, time.Minute)}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			ok, _, err := s.TakeAll(context.Background(), b)
			if err != nil {
				t.Error(err)
			}
			if ok {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 25 {
		t.Fatalf("%d admitted, want 25", n)
	}
}

// A bucket's key expires once the bucket would be full again, so that
// Redis holds only clients that are still paying for recent requests.
func TestStore_keys_expire_when_the_bucket_is_full_again(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	b := bucket("register", "192.0.2.44", 20, time.Hour)
	for range 3 {
		if ok, _, err := s.TakeAll(ctx, []ports.RateLimitBucket{b}); !ok || err != nil {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	}
	opts, _ := redis.ParseURL(os.Getenv("USERD_TEST_REDIS_URL"))
	c := redis.NewClient(opts)
	defer func() { _ = c.Close() }()
	ttl, err := c.PTTL(ctx, s.Key(b)).Result()
	// Three of twenty tokens an hour: full again in 3 × 3 minutes.
	if err != nil || ttl <= 8*time.Minute || ttl > 9*time.Minute {
		t.Fatalf("TTL %v (err %v), want about 9 minutes", ttl, err)
	}
}

func TestStore_fails_fast_when_redis_does_not_answer(t *testing.T) {
	t.Parallel()
	// A server that accepts connections and never answers: the worst case,
	// a Redis that hangs.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Close() }()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer func() { _ = c.Close() }()
		}
	}()
	// A port nobody listens on: a Redis that is down.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downAddr := closed.Addr().String()
	_ = closed.Close()

	for name, addr := range map[string]string{"hanging": silent.Addr().String(), "down": downAddr} {
		t.Run(name, func(t *testing.T) {
			s, err := redislimit.New(redislimit.Options{URL: "redis://" + addr + "/0", Timeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			start := time.Now()
			ok, _, err := s.TakeAll(context.Background(), []ports.RateLimitBucket{bucket("auth", "192.0.2.1", 5, time.Minute)})
			if elapsed := time.Since(start); ok || err == nil || elapsed > 500*time.Millisecond {
				t.Fatalf("ok=%v err=%v after %v, want an error within the timeout", ok, err, elapsed)
			}
		})
	}
}

func TestNew_refuses_a_url_that_is_not_redis(t *testing.T) {
	t.Parallel()
	if _, err := redislimit.New(redislimit.Options{URL: "http://localhost:6379"}); err == nil {
		t.Fatal("accepted an http URL")
	}
}

// BenchmarkTakeAll measures one call against the Redis of the tests: the
// cost a request pays for a limit shared by every node (compare
// ratelimit's BenchmarkAllow, the in-memory limiter). sequential is the
// latency of one call, parallel the throughput of many requests at once
// over the client's pool; two_buckets is a registration (both limits).
func BenchmarkTakeAll(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	one := []ports.RateLimitBucket{bucket("auth", "192.0.2.1", 1<<30, time.Minute)}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.TakeAll(ctx, one); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two_buckets", func(b *testing.B) {
		two := []ports.RateLimitBucket{one[0], bucket("register", "192.0.2.1", 1<<30, time.Hour)}
		for b.Loop() {
			if _, _, err := s.TakeAll(ctx, two); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel_1000_clients", func(b *testing.B) {
		var seed atomic.Uint32
		b.RunParallel(func(pb *testing.PB) {
			n := seed.Add(7919)
			for pb.Next() {
				n++
				bk := []ports.RateLimitBucket{bucket("auth", "10.0."+strconv.Itoa(int(n%1000)/256)+"."+strconv.Itoa(int(n%256)), 1<<30, time.Minute)}
				if _, _, err := s.TakeAll(ctx, bk); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
