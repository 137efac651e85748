package passwordhash

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// ErrCostlierHash is returned (wrapped) by CheckEncoded for a well-formed
// hash that would cost more to check than one with the configured
// parameters: an import refuses it.
var ErrCostlierHash = errors.New("hash costlier than the configured argon2id")

// The import ceiling. Every check of a stored hash holds a hashing slot,
// and a guess at an account costs nobody anything: a hash imported at the
// outer bounds held a slot for seconds and a gigabyte of memory per
// anonymous wrong guess. A costlier check also takes longer than an
// unknown email's dummy check, which the floor cannot hide (floor.go), and
// tells a guesser who was imported. (The measurements: docs/operations.md,
// "The cost ceiling".) So an import takes only hashes no costlier to check
// than one with the configured parameters:
//
//   - argon2id: m at most the configured m (the memory a deployment plans
//     its slots for: never more a check), and m×t, the blocks computed, at
//     most the configured m×t. Lanes add no work, they share it out; but a
//     hash with fewer lanes than configured runs on fewer cores, so its m×t
//     counts configured p / p times. Iterations are bounded by m×t: a hash
//     with a smaller m may make more passes.
//   - bcrypt: cost c when 128×2^c ≤ the configured m×t/p. One of bcrypt's
//     2^c rounds costs what somewhat fewer than 128 KiB-passes of argon2id
//     do (measured: docs/operations.md, "The cost ceiling"); 128 rounds
//     up, so that a bcrypt hash at the ceiling checks in at most about the
//     configured time. Cost 4, the least, is always taken: it checks in
//     well under a millisecond.
//
// With the defaults (m=19456 KiB, t=2, p=1) that is bcrypt up to cost 8;
// m×t of 131072 (m=65536, t=2) takes cost 10, 524288 cost 12. Verify still
// checks any hash within the outer bounds (MaxMemoryKiB, MaxBcryptCost…):
// hashes stored by an earlier import, or before the configured cost was
// lowered, are costlier than the ceiling and must go on verifying, or their
// owners could not sign in to have them rehashed.

// bcryptRoundWork is what one of bcrypt's 2^cost rounds costs, in
// KiB-passes of argon2id (m×t): see the import ceiling above.
const bcryptRoundWork = 128

// work is the blocks a check with p computes, m×t, in KiB-passes.
func (p Params) work() uint64 { return uint64(p.Memory) * uint64(p.Iterations) }

// bcryptCeiling returns the highest bcrypt cost an import takes with p as
// the configured parameters: the highest c with 128×2^c×p ≤ m×t, and at
// least bcrypt.MinCost.
func (p Params) bcryptCeiling() int {
	c := bcrypt.MinCost
	for c < MaxBcryptCost && bcryptRoundWork<<(c+1)*uint64(p.Parallelism) <= p.work() {
		c++
	}
	return c
}

// CheckEncoded returns nil when encoded is an argon2id PHC string or a
// bcrypt hash that Verify accepts and that is within the import ceiling
// of the configured parameters. A malformed hash, or one beyond the outer
// bounds, is an error wrapping ErrMalformedHash; one above the ceiling an
// error wrapping ErrCostlierHash. Each says why, naming the parameter and
// never quoting the hash. bcrypt is checked strictly, as $2a$, $2b$ or
// $2y$, a two-digit cost from bcrypt.MinCost to MaxBcryptCost, then 53
// characters of bcrypt's base64 (22 of salt, 31 of hash): Verify itself
// would accept trailing bytes or other prefixes.
func (h *Hasher) CheckEncoded(encoded string) error {
	switch {
	case strings.HasPrefix(encoded, "$argon2id$"):
		d, err := decodeArgon2id(encoded)
		if err != nil {
			return err
		}
		return h.withinCeiling(d.params)
	case strings.HasPrefix(encoded, "$2a$"), strings.HasPrefix(encoded, "$2b$"), strings.HasPrefix(encoded, "$2y$"):
		if !bcryptFormat.MatchString(encoded) {
			return fmt.Errorf("%w: bcrypt: want $2b$NN$ and 53 characters of [./A-Za-z0-9]", ErrMalformedHash)
		}
		if err := checkBcrypt(encoded); err != nil {
			return err
		}
		cost, _ := bcrypt.Cost([]byte(encoded))
		if cost < bcrypt.MinCost {
			return fmt.Errorf("%w: bcrypt: cost %d below %d", ErrMalformedHash, cost, bcrypt.MinCost)
		}
		if ceiling := h.params.bcryptCeiling(); cost > ceiling {
			return h.costlier("bcrypt cost %d above %d (cost %d needs m×t/p of at least %d)",
				cost, ceiling, cost, bcryptRoundWork<<cost)
		}
		return nil
	}
	return fmt.Errorf("%w: not argon2id ($argon2id$…) or bcrypt ($2a$, $2b$, $2y$)", ErrMalformedHash)
}

// withinCeiling returns an error wrapping ErrCostlierHash when a hash with
// q would cost more to check than one with the configured parameters.
func (h *Hasher) withinCeiling(q Params) error {
	c := h.params
	switch {
	case q.Memory > c.Memory:
		return h.costlier("argon2id memory %d KiB above %d", q.Memory, c.Memory)
	case q.Parallelism < c.Parallelism && q.work()*uint64(c.Parallelism) > c.work()*uint64(q.Parallelism):
		return h.costlier("argon2id m×t %d on %d lanes above %d on %d", q.work(), q.Parallelism, c.work(), c.Parallelism)
	case q.work() > c.work():
		return h.costlier("argon2id m×t %d above %d", q.work(), c.work())
	}
	return nil
}

// costlier returns an error wrapping ErrCostlierHash that names the
// configured parameters and says why.
func (h *Hasher) costlier(format string, args ...any) error {
	c := h.params
	return fmt.Errorf("%w (m=%d KiB, t=%d, p=%d): %s",
		ErrCostlierHash, c.Memory, c.Iterations, c.Parallelism, fmt.Sprintf(format, args...))
}
