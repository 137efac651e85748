// Package passwordhash implements ports.PasswordHasher with argon2id, encoded
// as PHC strings. It also verifies bcrypt hashes, so that users imported from
// another system can sign in and be rehashed on their next successful login.
// An import takes only hashes no costlier to check than one with the
// configured parameters (ceiling.go), and a failed check of a cheaper one
// lasts as long as a check with them (floor.go): the answer's timing tells
// neither an imported account nor one at all.
//
// Passwords are normalised to Unicode NFKC before hashing (NIST SP 800-63B,
// 5.1.1.2), so that one password typed on two keyboards or input methods
// ("ﬁ" and "fi", "１２３" and "123", a precomposed "é" and "e" followed by a
// combining accent) is one password.
package passwordhash

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/userd/userd/adapters/passwordhash/internal/argon2"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.PasswordHasher = (*Hasher)(nil)

// Bounds on the parameters of a hash that Verify agrees to compute. A stored
// hash is data, possibly imported from elsewhere: without bounds, one hash
// claiming m=4 GiB or t=2^32 would stall or kill the process on every login
// attempt for that account. Hash refuses to produce anything Verify would
// refuse, so a configuration beyond them fails loudly instead of locking
// every new user out. An import is held to a tighter ceiling, tied to the
// configured parameters (CheckEncoded); these outer bounds still let
// hashes stored by an earlier import verify.
const (
	MaxMemoryKiB   = 1 << 20 // 1 GiB
	MaxIterations  = 20
	MaxParallelism = 16
	MinSaltLen     = 8 // RFC 9106 minimum
	MaxSaltLen     = 64
	MinKeyLen      = 16
	MaxKeyLen      = 128
	// MaxBcryptCost bounds stored bcrypt hashes; each step doubles the
	// work, and cost 16 already takes seconds.
	MaxBcryptCost = 16
)

// MinMemoryKiBPerLane is the least memory Argon2 takes per lane of
// parallelism, in KiB (RFC 9106, section 3.1).
const MinMemoryKiBPerLane = 8

// argon2Version is the only Argon2 version golang.org/x/crypto implements
// (0x13), and so its copy in internal/argon2, which reuses the memory of
// one hash for the next.
const argon2Version = argon2.Version

// ErrMalformedHash is returned (wrapped) by Verify for a stored hash it cannot
// decode, or whose parameters are out of bounds.
var ErrMalformedHash = errors.New("malformed password hash")

// Params are argon2id cost parameters.
type Params struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Iterations is the number of passes over the memory.
	Iterations uint32
	// Parallelism is the number of lanes.
	Parallelism uint8
	// SaltLen is the length of the random salt in bytes.
	SaltLen uint32
	// KeyLen is the length of the derived hash in bytes.
	KeyLen uint32
}

// DefaultParams returns the parameters of the contract (OWASP's first
// argon2id recommendation): m=19456 KiB, t=2, p=1, a 16-byte salt and a
// 32-byte hash.
func DefaultParams() Params {
	return Params{Memory: 19456, Iterations: 2, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

// Validate reports whether p lies within the bounds Verify accepts.
func (p Params) Validate() error {
	switch {
	case p.Iterations < 1 || p.Iterations > MaxIterations:
		return fmt.Errorf("argon2 iterations %d outside 1..%d", p.Iterations, MaxIterations)
	case p.Parallelism < 1 || p.Parallelism > MaxParallelism:
		return fmt.Errorf("argon2 parallelism %d outside 1..%d", p.Parallelism, MaxParallelism)
	case p.Memory < MinMemoryKiBPerLane*uint32(p.Parallelism) || p.Memory > MaxMemoryKiB:
		return fmt.Errorf("argon2 memory %d KiB outside %d..%d", p.Memory, MinMemoryKiBPerLane*uint32(p.Parallelism), MaxMemoryKiB)
	case p.SaltLen < MinSaltLen || p.SaltLen > MaxSaltLen:
		return fmt.Errorf("argon2 salt length %d outside %d..%d", p.SaltLen, MinSaltLen, MaxSaltLen)
	case p.KeyLen < MinKeyLen || p.KeyLen > MaxKeyLen:
		return fmt.Errorf("argon2 key length %d outside %d..%d", p.KeyLen, MinKeyLen, MaxKeyLen)
	}
	return nil
}

// Hasher hashes passwords with argon2id and verifies argon2id and bcrypt
// hashes. It is safe for concurrent use.
//
// At most a fixed number of computations run at once (by default one per
// CPU): each argon2id computation takes Params.Memory (19 MiB by default)
// and saturates a core, so running more at once only adds memory, not
// throughput. Callers beyond the limit wait their turn for at most the
// configured wait, then get domain.ErrUnavailable: under a flood the
// service answers 503 instead of queueing without bound.
//
// The slots are split so that login cannot be starved: Hash (registration,
// password change, rehash) may hold at most all but the share reserved for
// Verify (login, the current password of an update), VerifyReserve of n.
// A flood of registrations then fills its own slots and waits, while
// logins still find a slot free. With one slot there would be nothing to
// split, so one CPU gets two slots, one of them Verify's: a login runs
// beside at most one hash, both at half speed, instead of queueing behind
// every registration.
//
// The memory of a computation is kept for the next one, one buffer a slot,
// but never more than Params.Memory a buffer: checking a larger hash (one
// stored by an earlier import) allocates its memory and lets it go.
type Hasher struct {
	params Params
	// slots bounds every computation; hashSlots bounds Hash further, to
	// len(slots) minus the share of Verify. Hash takes hashSlots first.
	slots     chan struct{}
	hashSlots chan struct{}
	wait      time.Duration
	blocks    *argon2.Pool
	// idleRelease is how long blocks keeps its memory after the last
	// computation (WithIdleRelease).
	idleRelease time.Duration
	// configured times the computations with params: a failed check of
	// any other hash lasts as long (floor.go).
	configured costTimes
	// now and sleep are the clock of the floor; tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration)
}

// DefaultIdleRelease is how long the hash memory kept for reuse (one
// buffer a slot, 19 MiB each by default) outlives the last computation:
// a burst of logins reuses it, and a server that has stopped hashing
// hands it back to the operating system (docs/performance.md, "Memory").
const DefaultIdleRelease = 5 * time.Second

// WithIdleRelease sets how long the kept hash memory outlives the last
// computation; d <= 0 keeps it for good.
func WithIdleRelease(d time.Duration) Option {
	return func(h *Hasher) { h.idleRelease = d }
}

// DefaultMaxWait is how long a hash waits for a free slot by default.
const DefaultMaxWait = 5 * time.Second

// VerifyReserve returns how many of n slots only Verify may use: half,
// rounded down, and at least one. Verifications (logins) outnumber hashes
// (registrations, password changes) in normal traffic, and login is what
// every user needs; half the CPU is what an attacker flooding
// registrations can take at most.
func VerifyReserve(n int) int { return max(1, n/2) }

// Option tunes a Hasher.
type Option func(*Hasher)

// WithConcurrency lets at most n computations run at once, VerifyReserve(n)
// of them for Verify only (n = 1 means two slots, one of them Verify's:
// see Hasher), each caller waiting at most maxWait for its turn. n < 1
// means one per CPU; maxWait <= 0 means DefaultMaxWait.
func WithConcurrency(n int, maxWait time.Duration) Option {
	return func(h *Hasher) {
		if n < 1 {
			n = runtime.GOMAXPROCS(0)
		}
		if n == 1 {
			n = 2
		}
		if maxWait <= 0 {
			maxWait = DefaultMaxWait
		}
		h.slots, h.hashSlots, h.wait = make(chan struct{}, n), make(chan struct{}, n-VerifyReserve(n)), maxWait
	}
}

// New returns a Hasher that hashes with p. Parameters outside the bounds of
// Params.Validate make Hash fail.
func New(p Params, opts ...Option) *Hasher {
	h := &Hasher{params: p, now: time.Now, sleep: sleep, idleRelease: DefaultIdleRelease}
	WithConcurrency(0, 0)(h)
	for _, o := range opts {
		o(h)
	}
	h.blocks = argon2.NewPool(cap(h.slots), p.Memory)
	// The blocks are unmapped when dropped (in the heap where the system
	// maps nothing: internal/argon2's arena). FreeOSMemory then returns
	// at once, rather than at the scavenger's pace, what the burst of
	// hashes left in the heap besides (and those heap blocks), which
	// would otherwise stay counted in RSS for many seconds.
	h.blocks.ReleaseWhenIdle(h.idleRelease, debug.FreeOSMemory)
	return h
}

// Capacity returns how many computations may run at once, and how many of
// them may be hashes.
func (h *Hasher) Capacity() (total, hashes int) { return cap(h.slots), cap(h.hashSlots) }

// acquire takes a slot of each semaphore in order, waiting for all of them
// together at most the maximum wait, then failing with
// domain.ErrUnavailable; or with ctx's error as soon as the request is
// given up: a client that left must not keep its place in the queue, nor
// have its password hashed for nobody. On failure it holds nothing.
func (h *Hasher) acquire(ctx context.Context, sems ...chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("password hashing: %w", err)
	}
	var timeout <-chan time.Time
	for i, sem := range sems {
		select {
		case sem <- struct{}{}:
			continue
		default:
		}
		if timeout == nil {
			t := time.NewTimer(h.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case sem <- struct{}{}:
			if err := ctx.Err(); err != nil {
				release(sems[:i+1]...)
				return fmt.Errorf("password hashing: %w", err)
			}
		case <-ctx.Done():
			release(sems[:i]...)
			return fmt.Errorf("password hashing: %w", ctx.Err())
		case <-timeout:
			release(sems[:i]...)
			return fmt.Errorf("password hashing busy: %w", domain.ErrUnavailable)
		}
	}
	return nil
}

// release gives back a slot of each semaphore.
func release(sems ...chan struct{}) {
	for _, sem := range sems {
		<-sem
	}
}

// Normalize returns password in Unicode NFKC, the form Hash hashes: "ﬁ"
// and "fi", or full-width and ASCII digits, are one password.
func (h *Hasher) Normalize(password string) string { return norm.NFKC.String(password) }

// Hash returns password hashed with argon2id in PHC string form,
// $argon2id$v=19$m=…,t=…,p=…$<salt>$<hash>, both unpadded standard base64.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	p := h.params
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	salt := make([]byte, p.SaltLen)
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(salt)
	if err := h.acquire(ctx, h.hashSlots, h.slots); err != nil {
		return "", err
	}
	defer release(h.hashSlots, h.slots)
	start := h.now()
	key := h.blocks.IDKey([]byte(h.Normalize(password)), salt, p.Iterations, p.Memory, p.Parallelism, p.KeyLen)
	h.configured.record(h.now().Sub(start))
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2Version, p.Memory, p.Iterations, p.Parallelism,
		base64.RawStdEncoding.EncodeToString(salt),
		base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded, an argon2id PHC string or
// a bcrypt hash ($2a$, $2b$, $2y$), and whether encoded should be replaced
// by Hash(password): always for bcrypt, and for argon2id when any parameter
// differs from the configured ones. A wrong password is (false, false, nil);
// a hash that cannot be decoded, or whose parameters exceed the bounds of
// this package, is an error wrapping ErrMalformedHash.
//
// The NFKC form of password is tried first. When it differs from password
// and does not match, password as given is tried too: hashes imported from
// systems that did not normalise, and argon2id hashes made before this
// package did, are of the raw form. A match of the raw form always asks
// for a rehash, which stores the normalised form from then on. The second
// try depends only on password, never on the account, so it tells an
// observer nothing about which accounts exist.
//
// A wrong password against a hash not made with the configured parameters
// (the ones rehashed at their owner's next sign-in) takes as long as
// against one made with them, the cost of an unknown email's dummy check:
// see floor.go.
func (h *Hasher) Verify(ctx context.Context, encoded, password string) (bool, bool, error) {
	var verify func(pw string) (bool, error)
	configured := false
	switch {
	case strings.HasPrefix(encoded, "$argon2id$"):
		d, err := decodeArgon2id(encoded)
		if err != nil {
			return false, false, err
		}
		configured = d.params == h.params
		verify = func(pw string) (bool, error) { return d.verify(h.blocks, pw), nil }
	case strings.HasPrefix(encoded, "$2a$"), strings.HasPrefix(encoded, "$2b$"), strings.HasPrefix(encoded, "$2y$"):
		if err := checkBcrypt(encoded); err != nil {
			return false, false, err
		}
		verify = func(pw string) (bool, error) { return verifyBcrypt(encoded, pw) }
	default:
		return false, false, fmt.Errorf("%w: unknown algorithm", ErrMalformedHash)
	}

	if err := h.acquire(ctx, h.slots); err != nil {
		return false, false, err
	}
	ok, raw, pad, err := h.check(verify, configured, password)
	if pad > 0 {
		// Out of the slot: waiting computes nothing and holds no memory.
		h.sleep(ctx, pad)
	}
	if err != nil {
		return false, false, err
	}
	return ok, ok && (raw || !configured), nil
}

// check runs verify on password's NFKC form, then as given when that
// differs and does not match, in the slot Verify took, and gives the slot
// back. It reports whether either matched, whether it was the raw form,
// and how much longer a failure must wait to cost what a check with the
// configured parameters costs.
func (h *Hasher) check(verify func(string) (bool, error), configured bool, password string) (ok, raw bool, pad time.Duration, err error) {
	defer release(h.slots)
	start := h.now()
	normalized := h.Normalize(password)
	tries := 1
	ok, err = verify(normalized)
	if !ok && err == nil && normalized != password {
		tries = 2
		ok, err = verify(password)
		raw = ok
	}
	elapsed := h.now().Sub(start)
	switch {
	case configured:
		h.configured.record(elapsed / time.Duration(tries))
	case !ok && err == nil:
		pad = h.floor(tries, elapsed)
	}
	return ok, raw, pad, err
}
