package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// argonRate measures the raw argon2id hash rate with p on GOMAXPROCS
// goroutines for about d: the ceiling of what login and create can reach.
// It returns hashes a second on all cores and the milliseconds one hash
// takes on one core.
func argonRate(ctx context.Context, p argonParams, d time.Duration) (perSec, msPerHash float64) {
	password := []byte(userPassword)
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	n := runtime.GOMAXPROCS(0)
	var (
		done atomic.Int64
		wg   sync.WaitGroup
	)
	// Warm up on every core: the first hashes also grow the heap.
	for range n {
		wg.Go(func() { argon2.IDKey(password, salt, p.Iterations, p.MemoryKiB, p.Parallelism, 32) })
	}
	wg.Wait()
	start := time.Now()
	deadline := start.Add(d)
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				argon2.IDKey(password, salt, p.Iterations, p.MemoryKiB, p.Parallelism, 32)
				done.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	hashes := float64(done.Load())
	if hashes == 0 {
		return 0, 0
	}
	return round(hashes/elapsed, 1), round(elapsed*float64(n)/hashes*1000, 2)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
