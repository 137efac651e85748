package jwtissuer

import (
	"context"
	"sync/atomic"
	"testing"
)

func BenchmarkIssue(b *testing.B) {
	for _, alg := range allAlgorithms {
		b.Run(alg, func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			for b.Loop() {
				if _, err := iss.Issue(ctx, testUser, testSession); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, alg := range allAlgorithms {
		b.Run(alg, func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			token := issue(b, iss)
			for b.Loop() {
				// The full verification, as for a token seen the first time.
				iss.verified = newVerifiedCache()
				if _, err := iss.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(alg+"/cached", func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			token := issue(b, iss)
			for b.Loop() {
				if _, err := iss.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The read path of the load test: every request verifies a token
		// seen before, from many goroutines, over a few thousand users.
		b.Run(alg+"/cached_parallel", func(b *testing.B) {
			iss, _, _ := newIssuerFor(b, alg)
			ctx := context.Background()
			tokens := make([]string, 1000)
			for n := range tokens {
				tokens[n] = issue(b, iss)
				if _, err := iss.Verify(ctx, tokens[n]); err != nil {
					b.Fatal(err)
				}
			}
			var seed atomic.Uint32
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				n := int(seed.Add(7919))
				for pb.Next() {
					n++
					if _, err := iss.Verify(ctx, tokens[n%len(tokens)]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
