package application

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestEndedSessions_expiry(t *testing.T) {
	t.Parallel()
	keep := 15*time.Minute + 30*time.Second
	e := newEndedSessions(keep)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.add(t0, "a", "b")
	if !e.has("a") || !e.has("b") || e.has("c") || e.has("") {
		t.Fatal("has: want a and b only")
	}
	// Past keep, the next add sweeps them: the set holds only what ended
	// within about 1.25 keep.
	e.add(t0.Add(keep), "c")
	if e.has("a") || e.has("b") || !e.has("c") || e.len() != 1 {
		t.Errorf("after keep: a %v b %v c %v len %d", e.has("a"), e.has("b"), e.has("c"), e.len())
	}
	// A repeat extends an entry.
	e.add(t0.Add(keep+keep/2), "c")
	e.add(t0.Add(2*keep+keep/4), "d")
	if !e.has("c") {
		t.Error("c, added again, was swept at its first expiry")
	}
}

func TestEndedSessions_concurrent(t *testing.T) {
	t.Parallel()
	e := newEndedSessions(time.Minute)
	now := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				sid := fmt.Sprintf("%d-%d", w, i)
				e.add(now.Add(time.Duration(i)*time.Millisecond), sid)
				if !e.has(sid) {
					t.Errorf("%s missing right after add", sid)
					return
				}
			}
		})
		wg.Go(func() {
			for i := range 1000 {
				_ = e.has(fmt.Sprintf("%d-%d", w, i))
			}
		})
	}
	wg.Wait()
	if e.len() != 8000 {
		t.Errorf("len = %d, want 8000", e.len())
	}
}

func BenchmarkEndedSessions_has(b *testing.B) {
	e := newEndedSessions(time.Minute)
	for i := range 10000 {
		e.add(time.Now(), fmt.Sprintf("%032x", i))
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = e.has("0123456789abcdef0123456789abcdef")
		}
	})
}
