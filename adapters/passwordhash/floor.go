package passwordhash

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The floor of a failed check. An unknown email's login checks the
// password against a dummy hash made with the configured parameters
// (application.AuthService.verifyDummy), and so does a wrong password of
// an account whose hash was made here. A hash stored by an import was made
// with other parameters, often cheaper ones (bcrypt at the costs the
// import takes with the defaults checks faster than the default argon2id:
// docs/performance.md, "Figures behind the code"): its owner's wrong
// password would answer sooner than an unknown email's, telling a guesser
// which accounts were imported, and that they exist. So a failed check of
// any hash not made with the configured parameters waits, after giving
// its slot back, until it has lasted as long as a check with them. The
// import refuses costlier hashes (ceiling.go), so none needs more than
// that wait to match.
//
// How long a check with the configured parameters takes is measured, not
// assumed: the median of the latest costSamples computations with them
// (every Hash, every check of a hash made here, the dummy's included),
// which follows the machine and its load as the dummy check does. Before
// there is any, the failed check computes one itself, which is the floor.
// A right password is not held: it is rehashed at once, and a sign-in
// tells the guesser more than any timing.

// costSamples is how many of the latest computations with the configured
// parameters the floor is the median of: enough that one slow one (a
// garbage collection, a preempted thread) does not move it, few enough to
// follow a change of load within a few logins.
const costSamples = 15

// costTimes keeps how long the latest computations with the configured
// parameters took, per password tried. It is safe for concurrent use.
type costTimes struct {
	mu     sync.Mutex
	latest [costSamples]time.Duration
	n      int
}

// record adds one computation's duration.
func (c *costTimes) record(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest[c.n%costSamples] = d
	c.n++
}

// median returns the median of the durations kept, and false when none is.
func (c *costTimes) median() (time.Duration, bool) {
	c.mu.Lock()
	kept := slices.Clone(c.latest[:min(c.n, costSamples)])
	c.mu.Unlock()
	if len(kept) == 0 {
		return 0, false
	}
	slices.Sort(kept)
	return kept[len(kept)/2], true
}

// floor returns how much longer a failed check that tried tries forms of
// a password in elapsed must wait to last as long as tries checks with the
// configured parameters. With none timed yet it computes one now, in the
// caller's slot, and times it: that computation is the floor.
func (h *Hasher) floor(tries int, elapsed time.Duration) time.Duration {
	per, ok := h.configured.median()
	if !ok {
		p := h.params
		if p.Validate() != nil {
			// Hash fails with these; there is nothing to match.
			return 0
		}
		start := h.now()
		h.blocks.IDKey(nil, make([]byte, p.SaltLen), p.Iterations, p.Memory, p.Parallelism, p.KeyLen)
		per = h.now().Sub(start)
		h.configured.record(per)
		elapsed += per
	}
	return time.Duration(tries)*per - elapsed
}

// sleep waits d, or until ctx ends: a client that left needs no answer.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
