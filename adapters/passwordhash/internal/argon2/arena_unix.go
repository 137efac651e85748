//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package argon2

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapArena maps n blocks of private anonymous memory: zeroed pages that
// the kernel provides as they are first written. The mapping is page
// aligned, more than a block's uint64s need.
func mapArena(n uint32) (arena, bool) {
	mapping, err := unix.Mmap(-1, 0, int(n)*blockBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return arena{}, false
	}
	// The memory is not the Go heap's: it holds no Go pointer (a block
	// is uint64s) and is never seen by the collector.
	blocks := unsafe.Slice((*block)(unsafe.Pointer(unsafe.SliceData(mapping))), n) //nolint:gosec // G103: n blocks are exactly the mapping's bytes, page aligned
	return arena{blocks: blocks, mapping: mapping}, true
}

// unmapArena unmaps a's mapping. An error would mean a is not a mapping
// of mapArena's, which drop does not call it for; the memory would then
// stay mapped, which loses nothing but the memory.
func unmapArena(a arena) { _ = unix.Munmap(a.mapping) }
