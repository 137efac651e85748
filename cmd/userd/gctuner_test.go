package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestTunedGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},              // nothing live yet: the most
		{4 * mib, 100},        // 8 MiB over 4 would be 200: capped
		{12 * mib, 66},        // an idle server's heap
		{16 * mib, 50},        //
		{31 * mib, 25},        // one argon2id slot in: 25 % as before
		{60 * mib, 25},        // two slots: never below the floor
		{32*mib + 1, 25},      // just over the floor's edge
		{8 * mib, 100},        // headroom equals the heap
		{10 * mib, 80},        //
		{uint64(1) << 40, 25}, // absurdly large: the floor
	} {
		if got := tunedGCPercent(tc.live, gcHeadroom); got != tc.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// The tuner sets GOGC after a collection from the heap it left: a heap
// far larger than the headroom gets the floor, and stop leaves it be.
func TestGCTuner_sets_the_percent_after_a_cycle(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	// A live heap of 64 MiB: 8 MiB of headroom is 12 %, under the floor.
	ballast := make([]*[1 << 20]byte, 64)
	for i := range ballast {
		ballast[i] = new([1 << 20]byte)
	}
	stop := startGCTuner(gcHeadroom)
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the finalizer runs after the cycle
		if gcPercent() == defaultGCPercent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GOGC not tuned to the floor after 10 s of collections")
		}
	}
	runtime.KeepAlive(ballast)
	stop()
	debug.SetGCPercent(90)
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	if got := gcPercent(); got != 90 {
		t.Errorf("GOGC %d after stop, want 90 left as set", got)
	}
}

// gcPercent reads the GC percent, which the runtime tells only by setting
// it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
