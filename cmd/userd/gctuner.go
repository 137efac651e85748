package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The collector's tuning while serving, when GOGC is not set. A fixed
// GOGC=25 (defaultGCPercent) allowed an idle server's 12 MiB live heap
// 3 MiB of garbage between two cycles: the authenticated read (10 KB of
// garbage each) ran a cycle every 300 requests, and the collector took a
// fifth of the server's CPU (docs/performance.md, "Speed, second pass
// (issue 30)"). The tuner lets gcHeadroom of garbage pile up instead,
// whatever the live heap, within [defaultGCPercent, maxTunedGCPercent]:
// 8 MiB over a 12 MiB heap (GOGC 66), 25 over 32 MiB and more (full
// caches). The argon2id blocks of the hash slots are outside the heap
// and count for neither. The soft memory limit (defaultMemoryLimit)
// stays above it all.
const (
	gcHeadroom        = 8 << 20
	maxTunedGCPercent = 100
)

// tunedGCPercent is the GOGC that allows headroom bytes of garbage over
// live bytes of live heap, within [defaultGCPercent, maxTunedGCPercent].
func tunedGCPercent(live, headroom uint64) int {
	if live == 0 || headroom*100/live >= maxTunedGCPercent {
		return maxTunedGCPercent
	}
	return max(int(headroom*100/live), defaultGCPercent) //nolint:gosec // G115: below maxTunedGCPercent, checked above
}

// gcTuner sets GOGC after every collection, from the live heap it left.
// Go has no hook at the end of a cycle; a finalizer does it: the object
// it is set on dies in the next cycle, its finalizer runs after it, tunes
// and sets another on a new object.
type gcTuner struct {
	headroom uint64
	current  int
	stopped  atomic.Bool
	live     []metrics.Sample
}

// sentinel is the object whose death tells a cycle ended. It holds a
// pointer so that it is never batched with other small objects by the
// tiny allocator, which would keep it alive past its cycle.
type sentinel struct{ _ *int }

// startGCTuner starts tuning for headroom bytes of garbage, from the
// current GC percent; the returned stop ends it (the GC percent stays as
// last set).
func startGCTuner(headroom uint64) (stop func()) {
	t := &gcTuner{headroom: headroom, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.current = debug.SetGCPercent(defaultGCPercent)
	debug.SetGCPercent(t.current)
	t.arm()
	return func() { t.stopped.Store(true) }
}

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		if t.stopped.Load() {
			return
		}
		t.tune()
		t.arm()
	})
}

// tune sets the GC percent for the live heap the cycle left. Changes
// below 5 points are not made: each takes the heap's lock.
func (t *gcTuner) tune() {
	metrics.Read(t.live)
	if t.live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	pct := tunedGCPercent(t.live[0].Value.Uint64(), t.headroom)
	if d := pct - t.current; d >= 5 || d <= -5 {
		debug.SetGCPercent(pct)
		t.current = pct
	}
}
