package kit

import (
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 50 ms until it holds, or fails t after
// timeout, saying what was awaited.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Race calls send n times at once, each in a goroutine of its own, and
// returns the replies in the order of i. send runs outside the test's
// goroutine: a t.Fatal there ends that goroutine alone (its reply stays
// the zero Reply), not the test, so t.Error and a return say more.
func Race(n int, send func(i int) Reply) []Reply {
	out := make([]Reply, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = send(i)
		})
	}
	close(start)
	wg.Wait()
	return out
}
