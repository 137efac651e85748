package passwordhash

import (
	"context"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// floorClock replaces h's clock by one that advances a millisecond at
// each reading, and its sleep by a record of the waits asked for: the
// floor's arithmetic is then exact, and nothing waits for real.
func floorClock(h *Hasher) *[]time.Duration {
	var waits []time.Duration
	var tick time.Time
	h.now = func() time.Time {
		tick = tick.Add(time.Millisecond)
		return tick
	}
	h.sleep = func(_ context.Context, d time.Duration) { waits = append(waits, d) }
	return &waits
}

// TestVerify_floor: a wrong password against a hash not made with the
// configured parameters (an imported one) waits until the check has
// lasted as long as one with them, per form of the password tried; a
// wrong password against a hash made here, and any right password, do
// not wait. Before, the bcrypt check of an imported account answered in
// its own time: 1 ms at cost 4 where an unknown email's dummy check took
// the configured 20 ms.
func TestVerify_floor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := New(fastParams)
	waits := floorClock(h)
	for range costSamples {
		h.configured.record(time.Second)
	}
	b, err := bcrypt.GenerateFromPassword([]byte("imported-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cheaper := rawArgon2id(t, Params{Memory: 32, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}, "imported-pw")
	here, err := h.Hash(ctx, "made-here-pw")
	if err != nil {
		t.Fatal(err)
	}
	*waits = nil

	for _, tc := range []struct {
		name, encoded, password string
		ok                      bool
		want                    []time.Duration
	}{
		// Each check reads the clock twice: 1 ms elapsed.
		{"bcrypt_wrong", string(b), "wrong-pw", false, []time.Duration{time.Second - time.Millisecond}},
		{"argon2id_other_params_wrong", cheaper, "wrong-pw", false, []time.Duration{time.Second - time.Millisecond}},
		// Not NFKC: two forms tried, as the dummy check would try.
		{"bcrypt_wrong_two_forms", string(b), "ﬁ-wrong", false, []time.Duration{2*time.Second - time.Millisecond}},
		{"bcrypt_right", string(b), "imported-pw", true, nil},
		{"argon2id_other_params_right", cheaper, "imported-pw", true, nil},
		{"made_here_wrong", here, "wrong-pw", false, nil},
	} {
		*waits = nil
		ok, _, err := h.Verify(ctx, tc.encoded, tc.password)
		if err != nil || ok != tc.ok {
			t.Fatalf("%s: Verify = %v, %v; want %v, nil", tc.name, ok, err, tc.ok)
		}
		if len(*waits) != len(tc.want) || (len(tc.want) == 1 && (*waits)[0] != tc.want[0]) {
			t.Errorf("%s: waited %v, want %v", tc.name, *waits, tc.want)
		}
	}
}

// TestVerify_floor_first_failure_computes_one: with no check with the
// configured parameters timed yet (a fresh process whose first request is
// a wrong password of an imported account), the failed check computes one
// itself, which is the floor, and times it for the next.
func TestVerify_floor_first_failure_computes_one(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	waits := floorClock(h)
	b, err := bcrypt.GenerateFromPassword([]byte("imported-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := h.Verify(context.Background(), string(b), "wrong-pw"); ok || err != nil {
		t.Fatalf("Verify = %v, %v; want false, nil", ok, err)
	}
	if per, timed := h.configured.median(); !timed || per != time.Millisecond {
		t.Fatalf("configured cost timed %v (%v), want one computation of 1 ms", per, timed)
	}
	if len(*waits) != 0 {
		t.Fatalf("waited %v after computing the floor itself, want no wait", *waits)
	}
	// The next failure waits on that timing.
	if ok, _, err := h.Verify(context.Background(), string(b), "wrong-pw"); ok || err != nil {
		t.Fatalf("Verify = %v, %v; want false, nil", ok, err)
	}
	if len(*waits) != 0 {
		t.Fatalf("waited %v for a 1 ms floor that the 1 ms check met, want none", *waits)
	}
}

// TestVerify_floor_times_the_configured_cost: every Hash and every check
// of a hash made here is timed, once per form of the password tried; the
// floor is the median of the latest costSamples.
func TestVerify_floor_times_the_configured_cost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := New(fastParams)
	floorClock(h)
	here, err := h.Hash(ctx, "made-here-pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"wrong-pw", "ﬁ-wrong", "made-here-pw"} {
		if _, _, err := h.Verify(ctx, here, pw); err != nil {
			t.Fatal(err)
		}
	}
	if h.configured.n != 4 {
		t.Fatalf("%d computations timed, want 4 (a Hash and three checks)", h.configured.n)
	}
	var c costTimes
	for i := range 3 * costSamples {
		c.record(time.Duration(i) * time.Millisecond)
	}
	// The latest 15 are 30..44 ms.
	if m, _ := c.median(); m != 37*time.Millisecond {
		t.Fatalf("median %v, want 37ms", m)
	}
}

// TestSleep_ends_with_the_request: a client that left is not waited for.
func TestSleep_ends_with_the_request(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		sleep(ctx, time.Hour)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleep outlived its context")
	}
}
