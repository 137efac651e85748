package ratelimit

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/userd/userd/ports"
)

// stubStore answers every TakeAll with ok, wait and err, recording the
// buckets it was asked for.
type stubStore struct {
	ok    bool
	wait  time.Duration
	err   error
	asked [][]ports.RateLimitBucket
}

func (s *stubStore) TakeAll(_ context.Context, b []ports.RateLimitBucket) (bool, time.Duration, error) {
	s.asked = append(s.asked, b)
	return s.ok, s.wait, s.err
}

func TestTake_with_a_store(t *testing.T) {
	ip := netip.MustParseAddr("2001:db8:1:2:3:4:5:6")
	errDown := errors.New("redis down")
	for _, tc := range []struct {
		name       string
		store      stubStore
		failClosed bool
		wantOK     bool
		wantWait   time.Duration
		wantErr    bool
		memTaken   bool
	}{
		{"admitted", stubStore{ok: true}, false, true, 0, false, true},
		{"refused_by_the_store", stubStore{wait: 7 * time.Second}, false, false, 7 * time.Second, false, false},
		{"store_down_fails_open", stubStore{err: errDown}, false, true, 0, true, true},
		{"store_down_fails_closed", stubStore{err: errDown}, true, false, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			store := tc.store
			remote := New(Config{Limit: 5, Period: time.Hour, Store: &store, Name: "register", FailClosed: tc.failClosed})
			// A memory limiter in the same call: all or none holds across both.
			mem := New(Config{Limit: 1, Now: clk.now})
			ok, wait, err := Take(context.Background(), ip, mem, remote)
			if ok != tc.wantOK || wait != tc.wantWait || (err != nil) != tc.wantErr {
				t.Fatalf("Take = %v, %v, %v", ok, wait, err)
			}
			want := ports.RateLimitBucket{Limiter: "register", Client: "2001:db8:1:2::/64", Limit: 5, Period: time.Hour}
			if len(store.asked) != 1 || len(store.asked[0]) != 1 || store.asked[0][0] != want {
				t.Fatalf("store asked %+v, want %+v", store.asked, want)
			}
			// The memory limiter's one token is gone only if admitted.
			if again, _ := mem.Allow(ip); again == tc.memTaken {
				t.Fatalf("memory token taken: %v, want %v", !again, tc.memTaken)
			}
		})
	}
	// A refusal by the memory limiter does not ask the store.
	store := &stubStore{ok: true}
	remote := New(Config{Limit: 5, Store: store, Name: "auth"})
	mem := New(Config{Limit: 1})
	mem.Allow(ip)
	if ok, _, _ := Take(context.Background(), ip, mem, remote); ok || len(store.asked) != 0 {
		t.Fatalf("ok=%v, store asked %d times", ok, len(store.asked))
	}
}
