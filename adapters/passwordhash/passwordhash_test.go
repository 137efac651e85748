package passwordhash

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/userd/userd/domain"
)

// fastParams keeps tests quick where the cost does not matter.
var fastParams = Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

func TestHashFormat(t *testing.T) {
	t.Parallel()
	enc, err := New(DefaultParams()).Hash(context.Background(), "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	// 16 bytes of salt are 22 base64 characters, 32 bytes of hash 43; no padding.
	re := regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)
	if !re.MatchString(enc) {
		t.Fatalf("hash %q does not match %s", enc, re)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	enc, err := h.Hash(context.Background(), "s3cret-Passw0rd")
	if err != nil {
		t.Fatal(err)
	}
	ok, rehash, err := h.Verify(context.Background(), enc, "s3cret-Passw0rd")
	if err != nil || !ok || rehash {
		t.Fatalf("Verify = %v, %v, %v; want true, false, nil", ok, rehash, err)
	}

	again, err := h.Hash(context.Background(), "s3cret-Passw0rd")
	if err != nil {
		t.Fatal(err)
	}
	if again == enc {
		t.Fatal("two hashes of one password are equal: salt not random")
	}
}

func TestWrongPassword(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	enc, err := h.Hash(context.Background(), "s3cret-Passw0rd")
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"s3cret-Passw0rd ", "S3cret-Passw0rd", ""} {
		ok, rehash, err := h.Verify(context.Background(), enc, pw)
		if err != nil || ok || rehash {
			t.Errorf("Verify(%q) = %v, %v, %v; want false, false, nil", pw, ok, rehash, err)
		}
	}
}

func TestBcryptImport(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	b, err := bcrypt.GenerateFromPassword([]byte("imported-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// The hash is $2a$; PHP and OpenBSD write the same hash as $2y$ and $2b$.
	for _, prefix := range []string{"$2a$", "$2b$", "$2y$"} {
		enc := prefix + string(b[4:])
		ok, rehash, err := h.Verify(context.Background(), enc, "imported-pw")
		if err != nil || !ok || !rehash {
			t.Errorf("%s: Verify = %v, %v, %v; want true, true, nil", prefix, ok, rehash, err)
		}
		ok, rehash, err = h.Verify(context.Background(), enc, "wrong-pw")
		if err != nil || ok || rehash {
			t.Errorf("%s wrong password: Verify = %v, %v, %v; want false, false, nil", prefix, ok, rehash, err)
		}
	}
}

func TestOtherArgon2Params(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	others := []Params{
		{Memory: 128, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 2, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 8, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 16},
	}
	for _, p := range others {
		enc, err := New(p).Hash(context.Background(), "pw-with-other-params")
		if err != nil {
			t.Fatal(err)
		}
		ok, rehash, err := h.Verify(context.Background(), enc, "pw-with-other-params")
		if err != nil || !ok || !rehash {
			t.Errorf("%+v: Verify = %v, %v, %v; want true, true, nil", p, ok, rehash, err)
		}
	}
}

// TestArgon2Interop checks a hash made by another implementation (the
// example of argon2-cffi's README), parameters in PHC order and encoding.
func TestArgon2Interop(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB hash")
	}
	t.Parallel()
	const enc = "$argon2id$v=19$m=65536,t=3,p=4$MIIRqgvgQbgj220jfp0MPA$YfwJSVjtjSU0zzV/P3S9nnQ/USre2wvJMjfCIjrTQbg"
	ok, rehash, err := New(DefaultParams()).Verify(context.Background(), enc, "correct horse battery staple")
	if err != nil || !ok || !rehash {
		t.Fatalf("Verify = %v, %v, %v; want true, true, nil", ok, rehash, err)
	}
}

func TestMalformedHashes(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	valid, err := h.Hash(context.Background(), "pw")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, "$")
	salt, key := parts[4], parts[5]
	withParams := func(params string) string {
		return "$argon2id$v=19$" + params + "$" + salt + "$" + key
	}

	tests := []struct {
		name    string
		encoded string
	}{
		{"empty", ""},
		{"plain_text", "hunter22"},
		{"unknown_algorithm", "$scrypt$ln=16,r=8,p=1$c2FsdA$aGFzaA"},
		{"argon2i", strings.Replace(valid, "$argon2id$", "$argon2i$", 1)},
		{"missing_version", "$argon2id$m=64,t=1,p=1$" + salt + "$" + key},
		{"version_16", strings.Replace(valid, "v=19", "v=16", 1)},
		{"too_few_fields", "$argon2id$v=19$m=64,t=1,p=1$" + salt},
		{"too_many_fields", valid + "$extra"},
		{"missing_param", withParams("m=64,t=1")},
		{"repeated_param", withParams("m=64,t=1,p=1,t=1")},
		{"unknown_param", withParams("m=64,t=1,p=1,keyid=abc")},
		{"param_without_value", withParams("m=64,t,p=1")},
		{"non_numeric_param", withParams("m=6x,t=1,p=1")},
		{"negative_param", withParams("m=-64,t=1,p=1")},
		{"leading_zero", withParams("m=064,t=1,p=1")},
		{"uint32_overflow", withParams("m=4294967296,t=1,p=1")},
		{"zero_iterations", withParams("m=64,t=0,p=1")},
		{"zero_parallelism", withParams("m=64,t=1,p=0")},
		{"memory_below_8_per_lane", withParams("m=8,t=1,p=2")},
		{"bad_salt_base64", "$argon2id$v=19$m=64,t=1,p=1$!!!!$" + key},
		{"padded_salt", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "==$" + key},
		{"bad_hash_base64", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$***"},
		{"short_salt", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + key},
		{"short_hash", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$aGFzaA"},
		{"bcrypt_truncated", "$2a$10$abc"},
		{"bcrypt_bad_cost", "$2a$xx$" + strings.Repeat("a", 53)},
		{"bcrypt_2x", "$2x$04$" + strings.Repeat("a", 53)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, rehash, err := h.Verify(context.Background(), tt.encoded, "pw")
			if err == nil || ok || rehash {
				t.Fatalf("Verify = %v, %v, %v; want false, false, an error", ok, rehash, err)
			}
			if !errors.Is(err, ErrMalformedHash) {
				t.Errorf("error %v does not wrap ErrMalformedHash", err)
			}
			if tt.encoded != "" && strings.Contains(err.Error(), tt.encoded) {
				t.Errorf("error %q echoes the hash", err)
			}
		})
	}
}

// TestAbsurdParamsRefused makes sure a hostile stored hash cannot make Verify
// allocate gigabytes or spin for minutes: it must fail fast, before hashing.
func TestAbsurdParamsRefused(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	const salt, key = "c29tZXNhbHRzb21lc2FsdA", "YfwJSVjtjSU0zzV/P3S9nnQ/USre2wvJMjfCIjrTQbg"
	for _, params := range []string{
		"m=4294967295,t=1,p=1",
		"m=2097152,t=1,p=1",
		"m=64,t=4294967295,p=1",
		"m=64,t=21,p=1",
		"m=4096,t=1,p=255",
		"m=4096,t=1,p=256",
		"m=4096,t=1,p=17",
	} {
		enc := "$argon2id$v=19$" + params + "$" + salt + "$" + key
		if _, _, err := h.Verify(context.Background(), enc, "pw"); !errors.Is(err, ErrMalformedHash) {
			t.Errorf("%s: err = %v, want ErrMalformedHash", params, err)
		}
	}

	// bcrypt cost 31 would take days.
	b, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	enc := "$2a$31" + string(b[6:])
	if _, _, err := h.Verify(context.Background(), enc, "pw"); !errors.Is(err, ErrMalformedHash) {
		t.Errorf("bcrypt cost 31: err = %v, want ErrMalformedHash", err)
	}
}

func TestHashRefusesInvalidParams(t *testing.T) {
	t.Parallel()
	for _, p := range []Params{
		{},
		{Memory: 64, Iterations: 0, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 0, SaltLen: 16, KeyLen: 32},
		{Memory: 4, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: MaxMemoryKiB + 1, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: MaxIterations + 1, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 4, KeyLen: 32},
		{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 8},
	} {
		if _, err := New(p).Hash(context.Background(), "pw"); err == nil {
			t.Errorf("Hash with %+v succeeded", p)
		}
	}
	if err := DefaultParams().Validate(); err != nil {
		t.Errorf("DefaultParams invalid: %v", err)
	}
}

func BenchmarkHash(b *testing.B) {
	h := New(DefaultParams())
	for b.Loop() {
		if _, err := h.Hash(context.Background(), "correct horse battery staple"); err != nil {
			b.Fatal(err)
		}
	}
}

// A flood of hashes is bounded: at most the configured number run at once,
// and a caller that cannot get a turn in time gets domain.ErrUnavailable
// (503) instead of queueing without bound.
func TestHasher_bounds_concurrent_hashes(t *testing.T) {
	t.Parallel()
	h := New(Params{Memory: 8 * 1024, Iterations: 3, Parallelism: 1, SaltLen: 16, KeyLen: 32},
		WithConcurrency(2, 5*time.Millisecond))
	enc, err := h.Hash(context.Background(), "a long enough secret")
	if err != nil {
		t.Fatal(err)
	}
	// Hold every slot: every other caller times out.
	for range 2 {
		if err := h.acquire(context.Background(), h.slots); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Hash(context.Background(), "another secret"); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Hash with no free slot = %v, want ErrUnavailable", err)
	}
	if _, _, err := h.Verify(context.Background(), enc, "a long enough secret"); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Verify with no free slot = %v, want ErrUnavailable", err)
	}
	// The Hash that timed out holds nothing: its hash slot is free again.
	if n := len(h.hashSlots); n != 0 {
		t.Fatalf("%d hash slots held after a timed-out Hash", n)
	}
	// A request given up while waiting leaves the queue at once.
	ctx, cancel := context.WithCancel(context.Background())
	h.wait = time.Minute
	done := make(chan error, 1)
	go func() { _, err := h.Hash(ctx, "another secret"); done <- err }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Hash of a cancelled request = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled request kept waiting for a slot")
	}
	release(h.slots)
	if ok, _, err := h.Verify(context.Background(), enc, "a long enough secret"); err != nil || !ok {
		t.Fatalf("Verify after release = %v, %v", ok, err)
	}
}

func TestHasher_capacity_split(t *testing.T) {
	t.Parallel()
	for n, want := range map[int][2]int{1: {2, 1}, 2: {2, 1}, 3: {3, 2}, 4: {4, 2}, 5: {5, 3}, 8: {8, 4}, 16: {16, 8}} {
		total, hashes := New(DefaultParams(), WithConcurrency(n, 0)).Capacity()
		if total != want[0] || hashes != want[1] {
			t.Errorf("WithConcurrency(%d): %d slots, %d for hashes; want %d, %d", n, total, hashes, want[0], want[1])
		}
	}
	if total, hashes := New(DefaultParams()).Capacity(); total < 2 || hashes < 1 || hashes >= total {
		t.Errorf("default: %d slots, %d for hashes", total, hashes)
	}
}

// Registrations and password changes cannot take the slots of login: with
// every hash slot busy, Hash waits and times out while Verify still runs
// at once; verifications may use every slot.
func TestHasher_hashes_never_take_the_verify_share(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 4} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			h := New(Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}, WithConcurrency(n, 20*time.Millisecond))
			enc, err := h.Hash(context.Background(), "a long enough secret")
			if err != nil {
				t.Fatal(err)
			}
			total, hashes := h.Capacity()
			// A flood of hashes holds all it may.
			for range hashes {
				if err := h.acquire(context.Background(), h.hashSlots, h.slots); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.Hash(context.Background(), "another secret"); !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("Hash beyond its share = %v, want ErrUnavailable", err)
			}
			// Every reserved slot still serves a login, without waiting.
			h.wait = time.Minute
			for range total - hashes {
				if err := h.acquire(context.Background(), h.slots); err != nil {
					t.Fatal(err)
				}
			}
			release(h.slots)
			start := time.Now()
			if ok, _, err := h.Verify(context.Background(), enc, "a long enough secret"); err != nil || !ok {
				t.Fatalf("Verify beside a hash flood = %v, %v", ok, err)
			}
			if waited := time.Since(start); waited > 10*time.Second {
				t.Fatalf("Verify waited %v", waited)
			}
			// Verifications alone may take every slot.
			for range hashes {
				release(h.hashSlots, h.slots)
			}
			for range total - hashes - 1 {
				release(h.slots)
			}
			for range total - 1 {
				if err := h.acquire(context.Background(), h.slots); err != nil {
					t.Fatal(err)
				}
			}
			if ok, _, err := h.Verify(context.Background(), enc, "a long enough secret"); err != nil || !ok {
				t.Fatalf("Verify in the last slot = %v, %v", ok, err)
			}
		})
	}
}

// TestVerify_drops_the_memory_of_a_larger_hash: checking a hash whose
// memory exceeds the configured one (stored by an earlier import) leaves
// nothing of that memory behind. Before, the free list kept it for reuse,
// and one check of a 1 GiB hash left the process at 1.1 GB. Not parallel:
// it reads the heap.
func TestVerify_drops_the_memory_of_a_larger_hash(t *testing.T) {
	const bigKiB = 64 << 10
	big := rawArgon2id(t, Params{Memory: bigKiB, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}, "imported-pw")
	h := New(fastParams)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if ok, _, err := h.Verify(context.Background(), big, "imported-pw"); !ok || err != nil {
		t.Fatalf("Verify = %v, %v; want true, nil", ok, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc+bigKiB<<10/4 {
		t.Fatalf("the heap kept %d MiB after checking a %d MiB hash with %d KiB configured, want none of it",
			(after.HeapAlloc-before.HeapAlloc)>>20, bigKiB>>10, fastParams.Memory)
	}
	runtime.KeepAlive(h)
}
