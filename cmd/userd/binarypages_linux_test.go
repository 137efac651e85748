package main

import (
	"os"
	"testing"
)

// smapsSample is /proc/self/smaps of a userd process, cut to the lines
// releasableMappings reads.
const smapsSample = `00400000-00403000 r--p 00000000 fe:00 10176756                           /usr/bin/userd
Rss:                  12 kB
Anonymous:             0 kB
00403000-01be1000 r-xp 00003000 fe:00 10176756                           /usr/bin/userd
Rss:               22388 kB
Anonymous:             0 kB
01be1000-034e7000 r--p 017e1000 fe:00 10176756                           /usr/bin/userd
Rss:               25532 kB
Anonymous:             0 kB
034e7000-036e9000 r--p 030e7000 fe:00 10176756                           /usr/bin/userd
Rss:                  12 kB
Anonymous:            12 kB
034ea000-037ef000 rw-p 030ea000 fe:00 10176756                           /usr/bin/userd
Rss:                 988 kB
Anonymous:           988 kB
7f0000000000-7f0000400000 r-xp 00000000 fe:00 20000 /usr/lib/x86_64-linux-gnu/libc.so.6
Anonymous:             0 kB
7f1000000000-7f1000400000 rw-p 00000000 00:00 0
Anonymous:          4096 kB
7f2000000000-7f2000400000 r--s 00000000 fe:00 10176756                           /usr/bin/userd
Anonymous:             0 kB
`

// TestReleasableMappings: only the executable's private, read-only
// segments with no copied-on-write page, of at least 2 MiB, are released;
// the segment the dynamic loader relocated (RELRO: anonymous pages), the
// writable data, other files, anonymous memory and a shared mapping keep
// theirs.
func TestReleasableMappings(t *testing.T) {
	got := releasableMappings([]byte(smapsSample), "/usr/bin/userd")
	want := []uintptr{0x00403000, 0x01be1000}
	if len(got) != len(want) {
		t.Fatalf("releasable mappings %+v, want those at %#x", got, want)
	}
	for i, m := range got {
		if m.start != want[i] {
			t.Errorf("mapping %d starts at %#x, want %#x", i, m.start, want[i])
		}
	}
	if got := releasableMappings([]byte(smapsSample), "/usr/bin/other"); len(got) != 0 {
		t.Errorf("mappings of another executable were releasable: %+v", got)
	}
}

// TestReleaseBinaryPagesKeepsRunning releases the test binary's own pages
// and goes on running code from them: what was dropped comes back from
// the file.
func TestReleaseBinaryPagesKeepsRunning(t *testing.T) {
	n, err := releaseBinaryPages()
	if err != nil {
		t.Fatal(err)
	}
	if n < uint64(minReleasable) {
		t.Fatalf("released %d bytes of the test binary, want its code at least (%d)", n, minReleasable)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil || len(status) == 0 {
		t.Fatalf("reading after the release: %v", err)
	}
	if _, err := releaseBinaryPages(); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}
