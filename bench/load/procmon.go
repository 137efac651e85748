package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// procMon samples a process's resident set size and CPU time from /proc.
// Figures are zero where /proc is not available (not Linux, or no pid).
type procMon struct {
	pid  int
	peak atomic.Int64 // KiB since the last resetPeak
	stop chan struct{}
	done sync.WaitGroup
}

func newProcMon(pid int) *procMon {
	m := &procMon{pid: pid, stop: make(chan struct{})}
	if pid <= 0 {
		return m
	}
	m.done.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	})
	return m
}

func (m *procMon) sample() int64 {
	rss, _ := readRSS(m.pid)
	for {
		p := m.peak.Load()
		if rss <= p || m.peak.CompareAndSwap(p, rss) {
			return rss
		}
	}
}

// resetPeak starts a new peak at the current RSS.
func (m *procMon) resetPeak() {
	m.peak.Store(0)
	m.sample()
}

// rssMiB returns the current RSS and the peak since resetPeak, in MiB.
func (m *procMon) rssMiB() (now, peak float64) {
	if m.pid <= 0 {
		return 0, 0
	}
	rss := m.sample()
	return float64(rss) / 1024, float64(m.peak.Load()) / 1024
}

// hwmMiB is the process's lifetime peak RSS (VmHWM).
func (m *procMon) hwmMiB() float64 {
	if m.pid <= 0 {
		return 0
	}
	_, hwm := readRSS(m.pid)
	return float64(hwm) / 1024
}

func (m *procMon) cpu() time.Duration {
	if m.pid <= 0 {
		return 0
	}
	return readCPU(m.pid)
}

func (m *procMon) close() {
	close(m.stop)
	m.done.Wait()
}

// readRSS returns VmRSS and VmHWM of pid in KiB.
func readRSS(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status") //nolint:gosec // G703: built from an int pid, the path stays under /proc/<pid>
	if err != nil {
		return 0, 0
	}
	field := func(name string) int64 {
		i := bytes.Index(b, []byte(name))
		if i < 0 {
			return 0
		}
		rest := b[i+len(name):]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
		return n
	}
	return field("VmRSS:"), field("VmHWM:")
}

// readCPU returns the user plus system CPU time of pid. /proc reports it
// in USER_HZ ticks, which is 100 a second on Linux.
func readCPU(pid int) time.Duration {
	return readCPUFields(pid, false)
}

// readCPUFields is readCPU, plus with children the CPU of the children
// the process has reaped: for the PostgreSQL postmaster, that of backends
// that ended (a pool that closes and opens connections forks new ones).
func readCPUFields(pid int, children bool) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat") //nolint:gosec // G703: built from an int pid, the path stays under /proc/<pid>
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces: split after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	ticks := int64(0)
	fields := []int{11, 12} // utime, stime
	if children {
		fields = append(fields, 13, 14) // cutime, cstime
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// machineCPU is the CPU time all processes of the machine have spent
// (user, nice, system, irq, softirq, steal; not idle or iowait), from
// /proc/stat. What the server and the loader did not spend of it, others
// did: the figure that tells a point taken on a busy machine.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// commandCPU returns the CPU time of every process whose command name is
// comm (for a local PostgreSQL server "postgres", for MariaDB "mariadbd"), by pid, with the
// children each has reaped.
func commandCPU(comm string) map[int]time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	want := "(" + comm + ") "
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(b), " "); ok && strings.HasPrefix(rest, want) {
			out[pid] = readCPUFields(pid, true)
		}
	}
	return out
}

// cpuGrowth is the CPU the processes spent between the two snapshots. A
// process that started meanwhile counts whole. One that ended meanwhile
// comes back whole in its parent's reaped-children time, so what it had
// spent before is taken off again.
func cpuGrowth(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += max(0, t-before[pid])
	}
	for pid, t := range before {
		if _, ok := after[pid]; !ok {
			d -= t
		}
	}
	return max(0, d)
}

// selfCPU is the loader's own user plus system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
