package main

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the figures were taken.
type Machine struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPUModel   string `json:"cpu_model"`
	MemoryMiB  int64  `json:"memory_mib,omitempty"`
	Commit     string `json:"userd_commit"`
	Dirty      bool   `json:"userd_dirty"`   // built from a tree with uncommitted changes
	Version    string `json:"userd_version"` // what `userd version` says
}

func describeMachine() Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		CPUModel:   "unknown",
		Commit:     "unknown",
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
					m.MemoryMiB = kib / 1024
				}
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			m.Dirty = len(bytes.TrimSpace(st)) > 0
		}
	}
	return m
}

// loadAverage is the one-minute load average, 0 where unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// identify asks the binary for its version and, when it was built with a
// commit, takes that as the commit measured: a binary given with --userd
// need not come from the tree the loader runs in.
func (m *Machine) identify(binary string, built bool) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		return
	}
	m.Version = strings.TrimSpace(string(out))
	if built {
		return
	}
	if _, rest, ok := strings.Cut(m.Version, "(commit "); ok {
		if c, _, ok := strings.Cut(rest, ","); ok && c != "unknown" && c != "" {
			m.Commit, m.Dirty = c, false
		}
	}
}
