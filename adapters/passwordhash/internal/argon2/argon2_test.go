package argon2

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	upstream "golang.org/x/crypto/argon2"
)

// TestRFC9106Argon2id is the Argon2id test vector of RFC 9106, section 5.3
// (with its secret and associated data, which IDKey does not take).
func TestRFC9106Argon2id(t *testing.T) {
	password := bytes.Repeat([]byte{0x01}, 32)
	salt := bytes.Repeat([]byte{0x02}, 16)
	secret := bytes.Repeat([]byte{0x03}, 8)
	data := bytes.Repeat([]byte{0x04}, 12)
	const want = "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659"
	// Twice: the second run gets the first one's memory back, dirty.
	pool := NewPool(1, 32)
	for range 2 {
		if got := hex.EncodeToString(pool.deriveKey(argon2id, password, salt, secret, data, 3, 32, 4, 32)); got != want {
			t.Fatalf("tag = %s, want %s", got, want)
		}
	}
}

// TestIDKeyMatchesUpstream checks IDKey against x/crypto's on random
// passwords, salts and costs, one after another, so that most runs take
// memory that an earlier run of another cost left dirty.
func TestIDKeyMatchesUpstream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := NewPool(1, 4096)
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := range n {
		password := randomBytes(rng, rng.IntN(80))
		salt := randomBytes(rng, 8+rng.IntN(24))
		time := uint32(1 + rng.IntN(3))
		threads := uint8(1 + rng.IntN(4))
		memory := uint32(8*int(threads) + rng.IntN(2048))
		keyLen := uint32(4 + rng.IntN(61))
		got := pool.IDKey(password, salt, time, memory, threads, keyLen)
		want := upstream.IDKey(password, salt, time, memory, threads, keyLen)
		if !bytes.Equal(got, want) {
			t.Fatalf("run %d (t=%d m=%d p=%d len=%d): key %x, x/crypto's %x", i, time, memory, threads, keyLen, got, want)
		}
	}
}

// TestIDKeyConcurrent runs derivations side by side, more than the free
// list holds, each checked against x/crypto's: no two may share memory.
func TestIDKeyConcurrent(t *testing.T) {
	pool := NewPool(2, 1024)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 10 {
				password, salt := randomBytes(rng, 16), randomBytes(rng, 16)
				memory := uint32(64 + rng.IntN(512))
				got := pool.IDKey(password, salt, 2, memory, 1, 32)
				if want := upstream.IDKey(password, salt, 2, memory, 1, 32); !bytes.Equal(got, want) {
					t.Errorf("m=%d: key %x, x/crypto's %x", memory, got, want)
				}
			}
		})
	}
	wg.Wait()
}

// TestIDKeyReusesMemory checks the point of the package: a derivation
// after another of the same cost allocates a few small objects (the key,
// blake2b's state, the lane's goroutine), not its 4 MiB of blocks.
func TestIDKeyReusesMemory(t *testing.T) {
	password, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	pool := NewPool(1, 4096)
	pool.IDKey(password, salt, 1, 4096, 1, 32) // fills the free list
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 10
	for range runs {
		pool.IDKey(password, salt, 1, 4096, 1, 32)
	}
	runtime.ReadMemStats(&after)
	if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 64<<10 {
		t.Errorf("bytes allocated a derivation = %d, want under 64 KiB (its blocks are 4 MiB)", perRun)
	}
}

// TestPoolKeepsNothingLarger: a derivation of a larger cost than the
// pool's (a stored hash made elsewhere) gets its own memory and drops it,
// while the pool keeps what smaller derivations gave back. Before, the one
// free list kept whatever came back, and a single 1 GiB hash left the
// process holding 1 GiB.
func TestPoolKeepsNothingLarger(t *testing.T) {
	password, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	pool := NewPool(2, 1024)
	pool.IDKey(password, salt, 1, 1024, 1, 32)
	pool.IDKey(password, salt, 1, 4096, 1, 32)
	pool.IDKey(password, salt, 1, 512, 1, 32) // takes the 1024 back, gives it back
	if got := pool.kept(); len(got) != 1 || got[0] != 1024 {
		t.Fatalf("pool keeps %v blocks, want [1024]: a 4096-block derivation must not be kept by a pool of 1024", got)
	}
	// Nor does the larger one take what the pool keeps (and drop it).
	pool.IDKey(password, salt, 1, 4096, 1, 32)
	if got := pool.kept(); len(got) != 1 || got[0] != 1024 {
		t.Fatalf("after a second large derivation the pool keeps %v blocks, want [1024]", got)
	}
}

// kept drains the pool and returns the size of each buffer it held, then
// puts them back.
func (p *Pool) kept() []int {
	var bufs []arena
	for {
		select {
		case a := <-p.free:
			bufs = append(bufs, a)
			continue
		default:
		}
		break
	}
	sizes := make([]int, len(bufs))
	for i, a := range bufs {
		sizes[i] = len(a.blocks)
		p.free <- a
	}
	return sizes
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func BenchmarkIDKey(b *testing.B) {
	password, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	pool := NewPool(1, 19456)
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pool.IDKey(password, salt, 2, 19456, 1, 32)
		}
	})
	b.Run("x-crypto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			upstream.IDKey(password, salt, 2, 19456, 1, 32)
		}
	})
}

// TestPoolReleasesWhenIdle: the memory kept for reuse is dropped once no
// derivation has given any back for the idle time, and released is told;
// a derivation after that allocates again and is kept again.
func TestPoolReleasesWhenIdle(t *testing.T) {
	password, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	pool := NewPool(2, 1024)
	released := make(chan struct{}, 4)
	pool.ReleaseWhenIdle(20*time.Millisecond, func() { released <- struct{}{} })
	pool.IDKey(password, salt, 1, 1024, 1, 32)
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the pool kept its memory 10 s after its last derivation, idle time 20 ms")
	}
	if got := pool.kept(); len(got) != 0 {
		t.Fatalf("after the idle release the pool keeps %v blocks, want none", got)
	}
	pool.IDKey(password, salt, 1, 1024, 1, 32)
	if got := pool.kept(); len(got) != 1 {
		t.Fatalf("after a derivation following the release the pool keeps %v, want one buffer", got)
	}
	<-released
}

// TestPoolWithoutIdleReleaseKeeps: the default keeps the memory for good.
func TestPoolWithoutIdleReleaseKeeps(t *testing.T) {
	pool := NewPool(1, 1024)
	pool.IDKey([]byte("pw"), []byte("0123456789abcdef"), 1, 1024, 1, 32)
	if pool.trim != nil {
		t.Fatal("a pool without ReleaseWhenIdle armed a release timer")
	}
	if !pool.Release() {
		t.Fatal("Release found nothing to drop after a derivation")
	}
	if pool.Release() {
		t.Fatal("a second Release found memory to drop")
	}
}

// TestIDKeyBlocksOutsideHeap: where the system maps memory, a
// derivation's blocks are not the Go heap's, not even the first time,
// and the pool's are unmapped when it drops them (a use after that would
// fault, which the derivation after Release would find).
func TestIDKeyBlocksOutsideHeap(t *testing.T) {
	if a, ok := mapArena(8); !ok {
		t.Skipf("%s/%s maps no memory: the blocks are in the heap", runtime.GOOS, runtime.GOARCH)
	} else {
		a.drop()
	}
	password, salt := []byte("correct horse battery staple"), []byte("0123456789abcdef")
	pool := NewPool(1, 4096)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := pool.IDKey(password, salt, 1, 4096, 1, 32)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("the first derivation allocated %d bytes of Go heap, want under 64 KiB (its 4 MiB of blocks mapped)", n)
	}
	if !pool.Release() {
		t.Fatal("Release found nothing to drop after a derivation")
	}
	if again := pool.IDKey(password, salt, 1, 4096, 1, 32); !bytes.Equal(again, got) ||
		!bytes.Equal(got, upstream.IDKey(password, salt, 1, 4096, 1, 32)) {
		t.Fatal("derivations around a Release differ, or differ from x/crypto's")
	}
}
