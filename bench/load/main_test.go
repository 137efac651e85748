package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// The bare reference server is this binary started again.
	if os.Getenv(bareBodyEnv) != "" {
		if err := serveBare(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Without --profile the twins are measured together, in turns: both
// points at each level, with their CPU, and the goal beside them.
func TestTwinsInTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("userd-load: starts a real userd and its twins; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	reports, err := run(ctx, []string{"--quick", "--out", t.TempDir(), "--scenarios", scReadTraced + "," + scReadUntraced,
		"--concurrency", "2", "--duration", "1200ms", "--reference=false"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	rep := reports[0]
	if len(rep.Results) != 2 {
		t.Fatalf("%d points, want the two twins': %+v", len(rep.Results), rep.Results)
	}
	for _, sc := range []string{scReadUntraced, scReadTraced} {
		p, ok := rep.point(sc, 2)
		if !ok || p.Requests == 0 || p.Errors != 0 || p.ServerCPU <= 0 || p.Seconds < 1 || p.Seconds > 2 {
			t.Errorf("%s: %+v", sc, p)
		}
	}
	if gs := tracedGoals(rep); len(gs) != 1 || gs[0].Value <= 0 {
		t.Errorf("goals %+v", gs)
	}
	if !strings.Contains(stderr.String(), "the receiver has dropped") {
		t.Errorf("the traced twin's exports are not reported:\n%s", stderr.String())
	}
}

// TestQuickRun runs the smoke mode end to end against a real userd built
// from this tree: every scenario at concurrency 1 and 4 on SQLite, the
// reference points, the table, the JSON and the SVG.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("userd-load: the end-to-end quick run builds and loads a real userd for about half a minute; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	profiles := t.TempDir()
	reports, err := run(ctx, []string{"--quick", "--out", out, "--profile", profiles}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Logf("stdout:\n%s", stdout.String())
	if len(reports) != 1 || reports[0].Backend != "sqlite" {
		t.Fatalf("want one sqlite report, got %d", len(reports))
	}
	rep := reports[0]
	for _, sc := range allScenarios {
		for _, conc := range []int{1, 4} {
			p, ok := rep.point(sc, conc)
			switch {
			case !ok:
				t.Errorf("%s c=%d: no row", sc, conc)
			case p.RPS <= 0 || p.Requests == 0:
				t.Errorf("%s c=%d: %v req/s over %d requests", sc, conc, p.RPS, p.Requests)
			case p.Errors != 0:
				t.Errorf("%s c=%d: %d errors, first: %s", sc, conc, p.Errors, p.ErrorSample)
			}
			if !strings.Contains(stdout.String(), sc) {
				t.Errorf("table does not mention %s", sc)
			}
		}
	}
	if rep.Reference == nil || rep.Reference.HashesPerSec <= 0 || len(rep.Reference.Bare) != 2 {
		t.Fatalf("reference points missing: %+v", rep.Reference)
	}
	for _, p := range rep.Reference.Bare {
		if p.RPS <= 0 || p.Errors != 0 {
			t.Errorf("bare c=%d: %v req/s, %d errors", p.Concurrency, p.RPS, p.Errors)
		}
	}
	if len(rep.Goals) == 0 {
		t.Error("no ratios computed")
	}
	// --profile: the server's profiles of each scenario at the highest
	// level up to 16, with their summaries.
	for _, name := range []string{"sqlite-read-many-c4.cpu.pb.gz", "sqlite-read-many-c4.allocs.pb.gz"} {
		if fi, err := os.Stat(filepath.Join(profiles, name)); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v", name, err)
		}
		top, err := os.ReadFile(filepath.Join(profiles, name+".top.txt"))
		if err != nil || !strings.Contains(string(top), "flat%") {
			t.Errorf("summary of %s: %v\n%s", name, err, top)
		}
	}

	// The JSON, under its timestamped and its stable name.
	stamped, _ := filepath.Glob(filepath.Join(out, "2*-sqlite.json"))
	if len(stamped) != 1 {
		t.Fatalf("want one timestamped JSON file, got %v", stamped)
	}
	for _, name := range []string{stamped[0], filepath.Join(out, "latest-sqlite.json")} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var got Report
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got.Results) != len(allScenarios)*2 || got.Machine.Cores < 1 || got.Machine.GoVersion == "" {
			t.Errorf("%s: %d results, machine %+v", name, len(got.Results), got.Machine)
		}
	}

	// --render redraws the chart of a results file and prints its table.
	var rendered bytes.Buffer
	if _, err := run(ctx, []string{"--render", filepath.Join(out, "latest-sqlite.json")}, &rendered, io.Discard); err != nil {
		t.Fatalf("--render: %v", err)
	}
	if !strings.Contains(rendered.String(), "refresh") {
		t.Errorf("--render printed no table:\n%s", rendered.String())
	}

	// The SVG: well-formed XML with an <svg> root and a line per series.
	for _, name := range []string{strings.TrimSuffix(stamped[0], ".json") + ".svg", filepath.Join(out, "latest-sqlite.svg")} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		root, lines := checkSVG(t, f)
		_ = f.Close() // read only
		if root != "svg" {
			t.Errorf("%s: root element %q", name, root)
		}
		// Two panels, a line per scenario and one for the bare handler.
		if want := 2 * (len(allScenarios) + 1); lines != want {
			t.Errorf("%s: %d polylines, want %d", name, lines, want)
		}
	}
}

// checkSVG parses an SVG document and returns its root element's name and
// the number of polylines.
func checkSVG(t *testing.T, r io.Reader) (root string, polylines int) {
	t.Helper()
	dec := xml.NewDecoder(r)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return root, polylines
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				polylines++
			}
		}
	}
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.concurrency, []int{1, 4, 16, 64}) || c.duration != 3*time.Second || c.users != 1000 ||
		!slices.Equal(c.backends, []string{"sqlite"}) || !slices.Equal(c.scenarios, allScenarios) || c.pool != 256 ||
		c.mfaSteps != 400 || c.passkeySteps != 1000 || c.oidcCodeSteps != 1000 || c.oidcIDTokenAlg != "RS256" || c.manyTokens != 20_000 || c.profile != "" {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseFlags([]string{"--quick", "--users", "50"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.concurrency, []int{1, 4}) || c.duration != time.Second || c.users != 50 || c.pool != 16 {
		t.Errorf("quick: %+v", c)
	}
	if c.mfaSteps != 100 || c.passkeySteps != 200 || c.oidcCodeSteps != 200 || c.manyTokens != 500 {
		t.Errorf("quick: %d mfa steps, %d passkey steps, %d code steps", c.mfaSteps, c.passkeySteps, c.oidcCodeSteps)
	}
	c, err = parseFlags([]string{"--quick", "--scenarios", "read,mfa,passkey", "--mfa-steps", "30", "--passkey-steps", "40"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.scenarios, []string{"read", "mfa", "passkey"}) || c.mfaSteps != 30 || c.passkeySteps != 40 {
		t.Errorf("explicit steps win over --quick: %+v", c)
	}
	c, err = parseFlags([]string{"--concurrency", "8", "--users", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.pool != 8 {
		t.Errorf("pool %d: want the highest concurrency when there are fewer users", c.pool)
	}
	for _, args := range [][]string{
		{"--scenarios", "read,nope"},
		{"--concurrency", "0"},
		{"--db", "oracle"},
		{"--target", "http://127.0.0.1:1"},
		{"--target", "http://127.0.0.1:1", "--admin-email", "a@example.com", "--admin-password", "x", "--db", "postgres"},
		{"--pid", "12"},
		{"--mfa-steps", "0"},
		{"--passkey-steps", "-1"},
		{"--oidc-code-steps", "0"},
		{"--oidc-id-token-alg", "HS256"},
		{"--many-tokens", "0"},
		{"--target", "http://127.0.0.1:1", "--admin-email", "a@example.com", "--admin-password", "x", "--profile", "p"},
		{"extra"},
	} {
		var ue usageError
		if _, err := parseFlags(args, io.Discard); !errors.As(err, &ue) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
	t.Setenv("USERD_TEST_POSTGRES_DSN", "")
	t.Setenv("USERD_TEST_MYSQL_DSN", "")
	for _, db := range []string{"both", "mysql", "all"} {
		if _, err := parseFlags([]string{"--db", db}, io.Discard); err == nil {
			t.Errorf("--db %s without a DSN: want an error", db)
		}
	}
	all, allErr := parseFlags([]string{"--db", "all", "--dsn", "postgres://h/db", "--mysql-dsn", "u@tcp(h:3306)/db"}, io.Discard)
	if allErr != nil || !slices.Equal(all.backends, []string{"sqlite", "postgres", "mysql"}) || all.dsnFor("mysql") != "u@tcp(h:3306)/db" {
		t.Errorf("--db all: %+v, %v; want the three backends, PostgreSQL before MySQL", all, allErr)
	}
}

// --profile profiles the level of the read goal, or the nearest below it.
func TestProfileConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		levels []int
		want   int
	}{
		{[]int{1, 4, 16, 64}, 16},
		{[]int{1, 4}, 4},
		{[]int{64, 8, 32}, 8},
		{[]int{32, 64}, 32},
	} {
		if got := profileConcurrency(tc.levels); got != tc.want {
			t.Errorf("profileConcurrency(%v) = %d, want %d", tc.levels, got, tc.want)
		}
	}
}

// TestRunPointSpent: workers whose prepared requests run out stop; the
// point ends when all have, long before its duration, and the attempt
// that found nothing left counts neither as a request nor as an error.
func TestRunPointSpent(t *testing.T) {
	t.Parallel()
	items := make([][]byte, 10)
	queues := deal(items, 3)
	for w, q := range queues {
		if len(q) != share(len(items), 3, w) {
			t.Errorf("worker %d: %d items, share says %d", w, len(q), share(len(items), 3, w))
		}
	}
	newStep := func(w int) step {
		q := queues[w]
		return func() error {
			if len(q) == 0 {
				return errSpent
			}
			q = q[1:]
			return nil
		}
	}
	start := time.Now()
	r := runPoint(context.Background(), newStep, 3, time.Minute, 1000)
	if r.requests != 10 || r.errors != 0 || r.capped || time.Since(start) > 10*time.Second {
		t.Errorf("got %d requests, %d errors, capped %v, in %v", r.requests, r.errors, r.capped, time.Since(start))
	}
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.9: 90 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond, 0: time.Millisecond} {
		if got := quantile(d, q); got != want {
			t.Errorf("q=%v: %v, want %v", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("empty: want 0")
	}
}

func TestWithSearchPath(t *testing.T) {
	t.Parallel()
	if got := withSearchPath("postgres://u@h:5432/db?sslmode=disable", "s1"); got != "postgres://u@h:5432/db?search_path=s1&sslmode=disable" {
		t.Errorf("URL form: %s", got)
	}
	if got := withSearchPath("host=h dbname=db", "s1"); got != "host=h dbname=db search_path=s1" {
		t.Errorf("key=value form: %s", got)
	}
}

func TestCPUGrowth(t *testing.T) {
	t.Parallel()
	// pid 1 is the parent: it spent 1 s itself and reaped pid 2, which had
	// spent 2 s before and 0.5 s more after the first snapshot. pid 3 was
	// idle; pid 4 started and spent 0.5 s.
	before := map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: time.Second}
	after := map[int]time.Duration{1: time.Second + time.Second + 2500*time.Millisecond, 3: time.Second, 4: 500 * time.Millisecond}
	if got := cpuGrowth(before, after); got != 2*time.Second {
		t.Errorf("cpuGrowth = %v, want 2s (1 s + 0.5 s + 0.5 s)", got)
	}
}

// TestOIDCGoals: the provider's goals against the refresh and the read of
// the same report, and client_credentials' target on SQLite only.
func TestOIDCGoals(t *testing.T) {
	t.Parallel()
	pt := func(sc string, conc int, rps float64) Point { return Point{Scenario: sc, Concurrency: conc, RPS: rps} }
	r := &Report{Backend: "sqlite", Results: []Point{
		pt("read", 4, 10_000), pt("read", 16, 12_000),
		pt("refresh", 4, 3000), pt("refresh", 16, 4000),
		pt(scOIDCFlow, 4, 1000), pt(scOIDCFlow, 16, 2100),
		pt(scOIDCCodeExchange, 16, 1900),
		pt(scOIDCRefresh, 4, 2500),
		pt(scOIDCClientCredentials, 16, 2500),
		pt(scOIDCUserInfo, 4, 8500), pt(scOIDCUserInfo, 16, 9000),
	}}
	got := map[string]Goal{}
	for _, g := range oidcGoals(r) {
		got[fmt.Sprintf("%s c=%d", g.Name, g.Concurrency)] = g
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		"oidc-flow req/s ÷ refresh req/s (best levels) c=16":          {0.525, true},
		"oidc-code-exchange req/s ÷ refresh req/s (best levels) c=16": {0.475, false},
		"oidc-refresh req/s ÷ refresh req/s (best levels) c=4":        {0.625, true},
		"oidc-client-credentials req/s (best level) c=16":             {2500, true},
		"oidc-userinfo req/s ÷ read req/s c=4":                        {0.85, true},
		"oidc-userinfo req/s ÷ read req/s c=16":                       {0.75, false},
	} {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: missing; got %v", name, got)
		case g.Value != want.value || g.Met == nil || *g.Met != want.met:
			t.Errorf("%s: %v (met %v), want %v (met %v)", name, g.Value, g.Met, want.value, want.met)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d goals, want 6: %v", len(got), got)
	}
	r.Backend = "postgres"
	for _, g := range oidcGoals(r) {
		if g.Name == scOIDCClientCredentials+" req/s (best level)" && (g.Met != nil || g.Target != "") {
			t.Errorf("client_credentials on PostgreSQL: target %q, met %v; the issue sets none", g.Target, g.Met)
		}
	}
}

// TestHookGoals: the claims hook's goals hold each hooked scenario's p50
// to its plain twin's at the same level, and only where both were
// measured.
func TestHookGoals(t *testing.T) {
	r := &Report{Results: []Point{
		{Scenario: "login", Concurrency: 4, P50: 20},
		{Scenario: scLoginHook, Concurrency: 4, P50: 20.5},
		{Scenario: "refresh", Concurrency: 4, P50: 1.2},
		{Scenario: scRefreshHook, Concurrency: 4, P50: 2.5},
		{Scenario: scRefreshHook, Concurrency: 16, P50: 3},
	}}
	gs := hookGoals(r)
	if len(gs) != 2 {
		t.Fatalf("goals %+v, want 2", gs)
	}
	if gs[0].Value != 0.5 || gs[0].Met == nil || !*gs[0].Met || gs[1].Value != 1.3 || gs[1].Met == nil || *gs[1].Met {
		t.Errorf("goals %+v", gs)
	}
}
