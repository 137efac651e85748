package ratelimit

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
)

// addr returns the n-th address of 10.0.0.0/8.
func addr(n uint32) netip.Addr {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], n)
	a[0] = 10
	return netip.AddrFrom4(a)
}

// BenchmarkAllow measures Allow under parallel load with the real clock:
// one client (every request contends for one bucket), a thousand clients
// that are always allowed, one client that is refused (the Retry-After
// path), and a flood of addresses never seen before (at and past the bound
// on remembered clients).
func BenchmarkAllow(b *testing.B) {
	b.Run("one_client", func(b *testing.B) {
		l := New(Config{Limit: 1 << 30})
		ip := addr(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow(ip)
			}
		})
	})
	b.Run("1000_clients", func(b *testing.B) {
		l := New(Config{Limit: 1 << 30})
		var seed atomic.Uint32
		b.RunParallel(func(pb *testing.PB) {
			n := seed.Add(7919)
			for pb.Next() {
				n++
				l.Allow(addr(n % 1000))
			}
		})
	})
	b.Run("refused", func(b *testing.B) {
		l := New(Config{Limit: 1})
		ip := addr(1)
		l.Allow(ip)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow(ip)
			}
		})
	})
	b.Run("new_clients", func(b *testing.B) {
		l := New(Config{Limit: 120})
		var next atomic.Uint32
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Allow(addr(next.Add(1)))
			}
		})
	})
}
