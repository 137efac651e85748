package argon2

// arena is the memory of one derivation: its blocks and, when they were
// mapped outside the Go heap, the mapping, which drop unmaps.
//
// Why outside the heap: the blocks hold no pointers and live from one
// derivation to the next (the Pool), so in the heap they only counted as
// live heap for the collector's pacing (19 MiB a hash slot at userd's
// cost: two slots made a 12 MiB heap look like a 50 MiB one, and the
// garbage allowed between two collections grew with it) and against the
// soft memory limit (on a machine of many CPUs, their slots alone passed
// it, and the collector ran without end). Mapped, they cost their pages
// only, handed back to the system the moment they are dropped.
type arena struct {
	blocks []block
	// mapping is the anonymous mapping behind blocks; nil when blocks
	// are in the Go heap (where mapping is not possible, or failed),
	// left to the collector once dropped.
	mapping []byte
}

// blockBytes is the size of a block in bytes.
const blockBytes = blockLength * 8

// newArena returns the memory of n blocks: mapped where the system can,
// else (and when mapping fails) in the Go heap.
func newArena(n uint32) arena {
	if a, ok := mapArena(n); ok {
		return a
	}
	return arena{blocks: make([]block, n)}
}

// drop gives a's memory back: unmapped at once, or left to the collector.
// a must not be used after.
func (a arena) drop() {
	if a.mapping != nil {
		unmapArena(a)
	}
}
