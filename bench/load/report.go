package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one backend's run: what the JSON file holds.
type Report struct {
	StartedAt        time.Time  `json:"started_at"`
	BackendSeconds   float64    `json:"backend_seconds"` // seeding, reference and scenarios of this backend
	TotalSeconds     float64    `json:"total_seconds"`   // since the program started, build included
	Backend          string     `json:"backend"`
	Target           string     `json:"target,omitempty"`
	Machine          Machine    `json:"machine"`
	Settings         Settings   `json:"settings"`
	Seed             SeedInfo   `json:"seed"`
	Reference        *Reference `json:"reference"`
	Results          []Point    `json:"results"`
	ServerPeakRSSMiB float64    `json:"server_peak_rss_mib"` // VmHWM at the end
	LoadAvgStart     float64    `json:"load_avg_start"`      // one-minute load average before and after:
	LoadAvgEnd       float64    `json:"load_avg_end"`        // anything else running skews the figures
	Goals            []Goal     `json:"goals"`
	// MailDrain is the sender's rate after the mail scenarios, when they
	// ran against a started server (whose mail goes to the loader's sink).
	MailDrain *MailDrain `json:"mail_drain,omitempty"`
}

// MailDrain is what the sender did once the load stopped: messages that
// reached the SMTP sink, over the seconds to the last of them.
type MailDrain struct {
	Messages     int64   `json:"messages"`
	Seconds      float64 `json:"seconds"`
	PerSec       float64 `json:"messages_per_sec"`
	BacklogStart int     `json:"outbox_backlog_start"` // -1: unknown
	BacklogEnd   int     `json:"outbox_backlog_end"`
}

// Settings are the run's parameters.
type Settings struct {
	Users           int         `json:"users"`
	Pool            int         `json:"pool"`
	SeedConcurrency int         `json:"seed_concurrency"`
	Scenarios       []string    `json:"scenarios"`
	Concurrency     []int       `json:"concurrency"`
	DurationSeconds float64     `json:"duration_seconds"`
	WarmupSeconds   float64     `json:"warmup_seconds"`
	MaxRequests     int64       `json:"max_requests"`
	Argon2          argonParams `json:"argon2"`
	Quick           bool        `json:"quick"`
	QuietWait       float64     `json:"quiet_wait_seconds,omitempty"`
	// Requests per point of the scenarios that prepare theirs.
	MFASteps     int `json:"mfa_steps,omitempty"`
	PasskeySteps int `json:"passkey_steps,omitempty"`
	// Codes exchanged per point of oidc-code-exchange, made beforehand.
	OIDCCodeSteps int `json:"oidc_code_steps,omitempty"`
	// The algorithm of the ID tokens of the OpenID scenarios.
	OIDCIDTokenAlg string `json:"oidc_id_token_alg,omitempty"`
	// Distinct access tokens read-many went round.
	ManyTokens int `json:"many_tokens,omitempty"`
}

// SeedInfo is how long the set-up took.
type SeedInfo struct {
	Users       int     `json:"users"`
	Seconds     float64 `json:"seconds"`
	UsersPerSec float64 `json:"users_per_sec"`
	PoolLogins  int     `json:"pool_logins"`
	PoolSeconds float64 `json:"pool_seconds"`
}

// Reference holds the reference points of the run.
type Reference struct {
	Argon2       argonParams `json:"argon2"`
	HashesPerSec float64     `json:"argon2id_hashes_per_sec"` // all cores
	HashMillis   float64     `json:"argon2id_ms_per_hash"`    // one core
	HashOtherCPU float64     `json:"argon2id_other_cpu_cores"`
	BodyBytes    int         `json:"bare_body_bytes"`
	Bare         []Point     `json:"bare"`
}

// Point is one scenario at one concurrency level. Latencies are in
// milliseconds; CPU is in cores (CPU seconds per wall second).
type Point struct {
	Scenario    string  `json:"scenario"`
	Backend     string  `json:"backend"`
	Concurrency int     `json:"concurrency"`
	Requests    int64   `json:"requests"`
	Errors      int64   `json:"errors"`
	Seconds     float64 `json:"seconds"`
	RPS         float64 `json:"rps"`
	P50         float64 `json:"p50_ms"`
	P90         float64 `json:"p90_ms"`
	P99         float64 `json:"p99_ms"`
	Max         float64 `json:"max_ms"`
	Mean        float64 `json:"mean_ms"`
	RSSEndMiB   float64 `json:"rss_end_mib"`
	RSSPeakMiB  float64 `json:"rss_peak_mib"`
	ServerCPU   float64 `json:"server_cpu_cores"`
	LoaderCPU   float64 `json:"loader_cpu_cores"`
	DBCPU       float64 `json:"db_cpu_cores"`    // a local database server's processes
	OtherCPU    float64 `json:"other_cpu_cores"` // the rest of the machine: noise
	ErrorSample string  `json:"error_sample,omitempty"`
	Capped      bool    `json:"capped,omitempty"` // stopped by --max-requests
}

// Goal is a figure the performance issue sets a target for, or a ratio it
// reasons with. Met is absent where there is no target.
type Goal struct {
	Name        string  `json:"name"`
	Concurrency int     `json:"concurrency,omitempty"`
	Value       float64 `json:"value"`
	Unit        string  `json:"unit,omitempty"`
	Target      string  `json:"target,omitempty"`
	Met         *bool   `json:"met,omitempty"`
	// Noisy: a figure it rests on was taken while other processes kept
	// more than noisyCores busy.
	Noisy bool `json:"noisy,omitempty"`
}

func (r *Report) hasErrors() bool {
	for _, p := range r.Results {
		if p.Errors > 0 {
			return true
		}
	}
	return false
}

// noisyCores is the other processes' CPU above which a point counts as
// taken on a busy machine.
const noisyCores = 0.25

func (r *Report) noisyPoints() int {
	n := 0
	for _, p := range r.Results {
		if p.OtherCPU > noisyCores {
			n++
		}
	}
	if r.Reference != nil {
		for _, p := range r.Reference.Bare {
			if p.OtherCPU > noisyCores {
				n++
			}
		}
	}
	return n
}

// point returns the result for scenario at conc.
func (r *Report) point(scenario string, conc int) (Point, bool) {
	for _, p := range r.Results {
		if p.Scenario == scenario && p.Concurrency == conc {
			return p, true
		}
	}
	return Point{}, false
}

// best returns the scenario's point with the highest req/s.
func (r *Report) best(scenario string) (Point, bool) {
	var b Point
	ok := false
	for _, p := range r.Results {
		if p.Scenario == scenario && (!ok || p.RPS > b.RPS) {
			b, ok = p, true
		}
	}
	return b, ok
}

// serverBackend reports whether the backend is a database server whose
// CPU the report shows (when it runs on this machine).
func serverBackend(backend string) bool { return backend == "postgres" || backend == "mysql" }

// printReport writes the table and the goals to w, rendered first so that
// the one write's error is the one to check.
func printReport(w io.Writer, r *Report) error {
	m := r.Machine
	commit := m.Commit
	if m.Dirty {
		commit += "+dirty"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nuserd load — %s — %d cores (%s), %s %s/%s, userd %s, %s\n\n",
		r.Backend, m.Cores, m.CPUModel, m.GoVersion, m.GOOS, m.GOARCH, commit, r.StartedAt.Format(time.RFC3339))
	var table strings.Builder
	table.WriteString("scenario\tbackend\tconc\treq/s\tp50 ms\tp90 ms\tp99 ms\terrors\tRSS MiB\tpeak MiB\tsrv CPU\tdb CPU\tload CPU\tother CPU\t\n")
	row := func(p Point) {
		db := "-"
		if serverBackend(p.Backend) {
			db = fmt.Sprintf("%.2f", p.DBCPU)
		}
		fmt.Fprintf(&table, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%.2f\t%s\t%.2f\t%.2f\t\n",
			p.Scenario, p.Backend, p.Concurrency, fmtRate(p.RPS), fmtMs(p.P50), fmtMs(p.P90), fmtMs(p.P99), p.Errors,
			fmtMiB(p.RSSEndMiB), fmtMiB(p.RSSPeakMiB), p.ServerCPU, db, p.LoaderCPU, p.OtherCPU)
	}
	for _, p := range r.Results {
		row(p)
	}
	if r.Reference != nil {
		for _, p := range r.Reference.Bare {
			row(p)
		}
	}
	b.WriteString(columns(table.String(), tabwriter.AlignRight))
	if ref := r.Reference; ref != nil && ref.HashesPerSec > 0 {
		fmt.Fprintf(&b, "\nreference: argon2id m=%d t=%d p=%d: %.1f hashes/s on %d cores (%.1f ms a hash on one core; other processes %.2f cores); bare handler body %d bytes\n",
			ref.Argon2.MemoryKiB, ref.Argon2.Iterations, ref.Argon2.Parallelism, ref.HashesPerSec, m.GOMAXPROCS, ref.HashMillis, ref.HashOtherCPU, ref.BodyBytes)
	}
	b.WriteString("CPU columns are cores busy (CPU seconds per second): the server, a local database server (PostgreSQL, MariaDB or MySQL), the loader, and the rest of the machine.\n")
	fmt.Fprintf(&b, "machine load average (1 min): %.2f before, %.2f after\n", r.LoadAvgStart, r.LoadAvgEnd)
	if n := r.noisyPoints(); n > 0 {
		fmt.Fprintf(&b, "warning: %d points ran while other processes kept more than %.2f cores busy; their figures are low\n", n, noisyCores)
	}
	fmt.Fprintf(&b, "seeding: %d users in %.1f s, pool of %d logins in %.1f s; server peak RSS (VmHWM) %s MiB; this backend took %.0f s\n",
		r.Seed.Users, r.Seed.Seconds, r.Seed.PoolLogins, r.Seed.PoolSeconds, fmtMiB(r.ServerPeakRSSMiB), r.BackendSeconds)
	if sf := secondFactorTable(r); sf != "" {
		b.WriteString("\n" + sf)
	}
	if len(r.Goals) > 0 {
		b.WriteString("\n" + goalTable(r.Goals))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// goalTable renders the goals as a table, with a note when a figure
// behind one was noisy.
func goalTable(goals []Goal) string {
	var table strings.Builder
	anyNoisy := false
	table.WriteString("ratio / goal\tconc\tvalue\ttarget\tmet\n")
	for _, g := range goals {
		conc, met := "", ""
		if g.Concurrency > 0 {
			conc = fmt.Sprint(g.Concurrency)
		}
		if g.Met != nil {
			met = map[bool]string{true: "yes", false: "NO"}[*g.Met]
		}
		if g.Noisy {
			met += " (noisy)"
			anyNoisy = true
		}
		val := fmt.Sprintf("%.3g", g.Value)
		if g.Value >= 1000 {
			val = fmt.Sprintf("%.0f", g.Value)
		}
		if g.Unit != "" {
			val += " " + g.Unit
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\t%s\t%s\n", g.Name, conc, val, g.Target, met)
	}
	out := columns(table.String(), 0)
	if anyNoisy {
		out += fmt.Sprintf("(noisy): a figure behind it was taken while other processes kept more than %.2f cores busy; run again on a quiet machine\n", noisyCores)
	}
	return out
}

// columns aligns the tab-separated cells of text into columns two spaces
// apart (tabwriter with flags).
func columns(text string, flags uint) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', flags)
	// Writes into a strings.Builder cannot fail.
	_, _ = io.WriteString(tw, text)
	_ = tw.Flush()
	return b.String()
}

func fmtRate(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fmtMs(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtMiB(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// writeResults writes <stamp>-<backend>.json and .svg into dir, and copies
// them as latest-<backend>.*.
func writeResults(dir, stamp string, r *Report) ([]string, error) {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	js = append(js, '\n')
	svg := []byte(chartSVG(r))
	name := sanitize(r.Backend)
	var files []string
	for _, f := range []struct {
		base string
		data []byte
	}{
		{stamp + "-" + name + ".json", js},
		{stamp + "-" + name + ".svg", svg},
		{"latest-" + name + ".json", js},
		{"latest-" + name + ".svg", svg},
	} {
		path := filepath.Join(dir, f.base)
		if err := os.WriteFile(path, f.data, 0o644); err != nil { //nolint:gosec // G306: results are committed and read like the rest of the checkout, not secret
			return files, fmt.Errorf("write results: %w", err)
		}
		files = append(files, path)
	}
	return files, nil
}

// renderFile prints the table of a results file and redraws its chart
// (the .svg beside it), for a file written by an earlier run.
func renderFile(path string, stdout io.Writer) ([]*Report, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the results file with --render; reading it is the option's job
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	saved := r.Goals
	r.Goals = goals(&r)
	// A goal that compares with another backend's run is kept as the run
	// wrote it: the file holds this backend's points only.
	for _, g := range saved {
		if g.Name == crossRefreshGoal {
			r.Goals = append(r.Goals, g)
		}
	}
	svg := strings.TrimSuffix(path, filepath.Ext(path)) + ".svg"
	if err := os.WriteFile(svg, []byte(chartSVG(&r)), 0o644); err != nil { //nolint:gosec // G306: the chart is committed beside its results file and read like the rest of the checkout
		return nil, err
	}
	if err := printReport(stdout, &r); err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(stdout, "\nwritten: %s\n", svg); err != nil {
		return nil, err
	}
	return []*Report{&r}, nil
}

// sanitize keeps a backend label usable as part of a file name.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
