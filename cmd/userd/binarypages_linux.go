package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseBinaryPages unmaps the pages of the executable's read-only
// segments (its code, and its read-only data with the Go symbol table)
// from the process, so that only the pages it runs from again come back.
//
// Why: the kernel keeps a file that was just written or read ahead in the
// page cache as large folios (2 MiB), and a fault anywhere in one maps
// the whole folio (smaps' FilePmdMapped). Start-up code touches most of
// them, so a 74 MB binary idled with 48 MiB of itself resident, of which
// the server later runs from a few MiB. Marking the segments
// MADV_NOHUGEPAGE makes the kernel map them page by page from then on
// (mm/memory.c's do_set_pmd refuses a folio-sized mapping in such a VMA),
// and MADV_DONTNEED drops today's mappings: the page cache keeps the
// file, so a page the server needs again costs a minor fault, not a read.
//
// Only private, unwritable mappings of the executable with no anonymous
// (copied-on-write) page are touched: for them MADV_DONTNEED loses
// nothing, as the pages are the file's. A writable segment, or the small
// one the dynamic loader wrote relocations into and then protected
// (RELRO), keeps its pages. It returns the bytes of the mappings it
// released; on error nothing is lost but the saving.
func releaseBinaryPages() (uint64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release binary pages: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("release binary pages: %w", err)
	}
	var released uint64
	for _, m := range releasableMappings(smaps, exe) {
		size := m.end - m.start
		if err := madvise(m.start, size, unix.MADV_NOHUGEPAGE); err != nil {
			return released, fmt.Errorf("release binary pages: madvise nohugepage: %w", err)
		}
		if err := madvise(m.start, size, unix.MADV_DONTNEED); err != nil {
			return released, fmt.Errorf("release binary pages: madvise dontneed: %w", err)
		}
		if err := madvise(m.start, size, unix.MADV_RANDOM); err != nil {
			return released, fmt.Errorf("release binary pages: madvise random: %w", err)
		}
		released += uint64(size)
	}
	// The process's own executable, as the kernel names it: not a path
	// anyone else chose.
	f, err := os.Open(exe) //nolint:gosec // G304: see above
	if err != nil {
		return released, fmt.Errorf("release binary pages: %w", err)
	}
	advised := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	if err := errors.Join(advised, f.Close()); err != nil {
		return released, fmt.Errorf("release binary pages: fadvise: %w", err)
	}
	return released, nil
}

// madvise is madvise(2) on an address range the process did not allocate
// itself (a segment of its executable), so it takes the range as numbers
// rather than as a Go slice.
func madvise(addr, length uintptr, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, length, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}

// mapping is one address range of /proc/self/smaps.
type mapping struct {
	start, end uintptr
	perms      string
	path       string
	anonymous  int64 // kB
}

// minReleasable is the smallest segment worth releasing: below one large
// folio there is nothing a folio-sized mapping could have added.
const minReleasable = 2 << 20

// releasableMappings are the mappings of smaps that releaseBinaryPages
// may drop: of the file exe, private, not writable, with no anonymous
// page, and at least minReleasable long.
func releasableMappings(smaps []byte, exe string) []mapping {
	var all []mapping
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		if m, ok := parseMapsLine(line); ok {
			all = append(all, m)
			continue
		}
		if len(all) == 0 {
			continue
		}
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				kb = -1 // unreadable: never released
			}
			all[len(all)-1].anonymous = kb
		}
	}
	var out []mapping
	for _, m := range all {
		if m.path == exe && len(m.perms) == 4 && m.perms[1] != 'w' && m.perms[3] == 'p' &&
			m.anonymous == 0 && m.end-m.start >= minReleasable {
			out = append(out, m)
		}
	}
	return out
}

// parseMapsLine reads a mapping's first line, as
// "00403000-01be1000 r-xp 00003000 fe:00 10176756   /usr/bin/userd";
// ok is false for any other line of smaps.
func parseMapsLine(line string) (mapping, bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 {
		return mapping{}, false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	m := mapping{start: uintptr(start), end: uintptr(end), perms: fields[1], anonymous: -1}
	if len(fields) >= 6 {
		m.path = strings.Join(fields[5:], " ")
	}
	return m, true
}
