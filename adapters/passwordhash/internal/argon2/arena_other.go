//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package argon2

// mapArena does not map here: the blocks are in the Go heap.
func mapArena(uint32) (arena, bool) { return arena{}, false }

func unmapArena(arena) {}
