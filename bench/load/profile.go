package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// profileAt is the concurrency whose points --profile profiles: that of
// the read goal.
const profileAt = 16

// profiler fetches the profiles of the started server (USERD_PPROF on its
// metrics listener) during one measured point of each scenario, into dir:
// a CPU profile of the measured run and the allocations made during it,
// each with `go tool pprof -top` beside it, so that a run before a change
// and one after can be held side by side.
type profiler struct {
	dir, base, backend string
	concurrency        int
	logf               func(string, ...any)
}

// profileConcurrency is profileAt if it is among the levels, else the
// highest level below it, else the lowest.
func profileConcurrency(levels []int) int {
	at := slices.Min(levels)
	for _, c := range levels {
		if c <= profileAt && c > at {
			at = c
		}
	}
	return at
}

// around returns load, wrapped to be profiled when the point is one that
// p profiles (p may be nil: no profiling).
func (p *profiler) around(ctx context.Context, scenario string, conc int, d time.Duration, load func() pointResult) func() pointResult {
	if p == nil || conc != p.concurrency {
		return load
	}
	return func() pointResult {
		// Whole seconds, as the handlers take them: the profile covers
		// the measured run to within a second.
		secs := max(1, int((d+time.Second/2)/time.Second))
		stem := filepath.Join(p.dir, fmt.Sprintf("%s-%s-c%d", p.backend, scenario, conc))
		kinds := []struct{ path, file string }{
			{"/debug/pprof/profile", stem + ".cpu.pb.gz"},
			// With seconds, the allocations made during that time only.
			{"/debug/pprof/allocs", stem + ".allocs.pb.gz"},
		}
		errs := make([]error, len(kinds))
		var wg sync.WaitGroup
		for i, k := range kinds {
			wg.Go(func() { errs[i] = p.fetch(ctx, k.path, secs, k.file) })
		}
		r := load()
		wg.Wait()
		for i, k := range kinds {
			if errs[i] != nil {
				p.logf("%s: profile %s: %v", p.backend, k.path, errs[i])
				continue
			}
			p.top(ctx, k.file, k.file+".top.txt")
		}
		// Allocation counts too: the bytes hide many small allocations.
		if errs[1] == nil {
			p.top(ctx, kinds[1].file, kinds[1].file+".objects.top.txt", "-sample_index=alloc_objects")
		}
		p.logf("%s: %s c=%d profiles in %s.*", p.backend, scenario, conc, stem)
		return r
	}
}

// fetch saves the profile at path, taken over secs seconds, into file.
func (p *profiler) fetch(ctx context.Context, path string, secs int, file string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s%s?seconds=%d", p.base, path, secs), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req) //nolint:gosec // G704: the metrics listener of the userd this run started
	if err != nil {
		return err
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", res.Status, bytes.TrimSpace(body))
	}
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o600)
}

// top writes `go tool pprof -top -nodecount=25` of profile into out; a
// failure (no go command beside a --userd binary) is only reported.
func (p *profiler) top(ctx context.Context, profile, out string, flags ...string) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, flags...)
	cmd := exec.CommandContext(ctx, "go", append(args, profile)...) //nolint:gosec // G204: go tool pprof on a file this run wrote
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		p.logf("%s: go tool pprof -top %s: %v: %s", p.backend, profile, err, bytes.TrimSpace(stderr.Bytes()))
		return
	}
	if err := os.WriteFile(out, stdout.Bytes(), 0o600); err != nil {
		p.logf("%s: %v", p.backend, err)
	}
}
