// Command userd-load measures userd under load and holds the figures
// against reference points taken in the same run on the same machine.
//
// With no flags it builds userd, starts it on a free 127.0.0.1 port with a
// SQLite database in a temporary directory, seeds 1,000 users through the
// API, logs in a pool of them and runs every scenario (read, me, list,
// read-many, create, login, refresh, mixed, mfa, passkey, reset, verify) at
// concurrency 1, 4, 16 and 64 for 3 s each; mfa and passkey instead send
// --mfa-steps and --passkey-steps requests a level, prepared beforehand
// (secondfactor.go). The reference points are a bare net/http handler that answers the
// same bytes as a user read, loaded the same way, and the raw argon2id hash
// rate on all cores. It prints one table and writes the same figures as
// JSON, and an SVG chart, into bench/results/.
//
//	go run ./cmd/userd-load                                   # SQLite, defaults
//	go run ./cmd/userd-load --quick                           # smoke run, well under a minute
//	go run ./cmd/userd-load --db postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./cmd/userd-load --db all --mysql-dsn 'root@tcp(127.0.0.1:3306)/test'  # sqlite, postgres and mysql
//	go run ./cmd/userd-load --scenarios read,login --concurrency 16 --duration 10s
//	go run ./cmd/userd-load --scenarios read,mfa,passkey --concurrency 1,4   # second factors beside a read
//	go run ./cmd/userd-load --target http://127.0.0.1:8080 --admin-email E --admin-password P
//	go run ./cmd/userd-load --render bench/results/latest-sqlite.json   # table and chart again
//
// The load is closed-loop: each worker sends its next request when the
// previous one has been answered, so req/s is what the server sustains at
// that many requests in flight. The loader shares the machine's cores with
// the server, as the goals of the performance issue assume.
//
// Each point also records the CPU (in cores) of the server, of a local
// PostgreSQL, of the loader, and of everything else on the machine: a
// point where other processes were busy is flagged as noisy, and
// --quiet-wait makes each point wait for a quiet machine first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if os.Getenv(bareBodyEnv) != "" {
		// Started by ourselves as the bare reference server.
		if err := serveBare(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "userd-load bare server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "userd-load:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// allScenarios in the order they run and appear in the table.
// The mail scenarios come last: the messages they queue are sent in the
// background, and would otherwise load the server during the others.
var allScenarios = []string{"read", "read-many", "me", "list", "create", "login", "refresh", "mixed", "mfa", "passkey", "reset", "verify"}

// config is the parsed command line.
type config struct {
	userdPath    string
	target       string
	adminEmail   string
	adminPass    string
	pid          int
	label        string
	backends     []string
	dsn          string
	mysqlDSN     string
	users        int
	pool         int
	seedConc     int
	scenarios    []string
	concurrency  []int
	duration     time.Duration
	warmup       time.Duration
	maxRequests  int64
	mfaSteps     int
	passkeySteps int
	hashDuration time.Duration
	reference    bool
	out          string
	quick        bool
	argon        argonParams
	timeout      time.Duration
	quietWait    time.Duration
	render       string
	manyTokens   int
	profile      string
}

// argonParams are the argon2id parameters given to the started server and
// used for the raw hash-rate reference.
type argonParams struct {
	MemoryKiB   uint32 `json:"memory_kib"`
	Iterations  uint32 `json:"iterations"`
	Parallelism uint8  `json:"parallelism"`
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("userd-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		db, scen, conc string
		mem, iter, par uint
	)
	fs.StringVar(&c.userdPath, "userd", "", "userd binary to start (default: build ./cmd/userd into a temporary directory)")
	fs.StringVar(&c.target, "target", "", "load an already running userd at this base URL instead of starting one (needs --admin-email and --admin-password)")
	fs.StringVar(&c.adminEmail, "admin-email", "", "admin email for --target (a started server gets its own bootstrap admin)")
	fs.StringVar(&c.adminPass, "admin-password", "", "admin password for --target")
	fs.IntVar(&c.pid, "pid", 0, "with --target: the server's process id, to report its RSS and CPU (Linux /proc)")
	fs.StringVar(&c.label, "label", "target", "with --target: the backend name used in the table and file names")
	fs.StringVar(&db, "db", "sqlite", "backend of the started server: sqlite, postgres, mysql, both (sqlite and postgres) or all (the three)")
	fs.StringVar(&c.dsn, "dsn", "", "PostgreSQL DSN for --db postgres|both|all (default $USERD_TEST_POSTGRES_DSN); each run uses a fresh schema, dropped afterwards")
	fs.StringVar(&c.mysqlDSN, "mysql-dsn", "", "MySQL/MariaDB DSN (user:password@tcp(host:port)/database) for --db mysql|all (default $USERD_TEST_MYSQL_DSN); each run uses a fresh database beside it, dropped afterwards")
	fs.IntVar(&c.users, "users", 1000, "users to seed through the API (each create hashes a password: ~10 s per 1,000 on 2 cores)")
	fs.IntVar(&c.pool, "pool", 256, "users logged in before the scenarios, whose tokens the workers use (at least the highest concurrency)")
	fs.IntVar(&c.seedConc, "seed-concurrency", 2*runtime.NumCPU(), "concurrent requests while seeding and logging in the pool")
	fs.StringVar(&scen, "scenarios", strings.Join(allScenarios, ","), "scenarios to run, comma-separated: "+strings.Join(allScenarios, ","))
	fs.StringVar(&conc, "concurrency", "1,4,16,64", "concurrency levels (closed-loop workers), comma-separated")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "measured time per scenario and concurrency level")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "unmeasured warm-up before each measured point")
	fs.IntVar(&c.mfaSteps, "mfa-steps", 400, "mfa: measured requests per concurrency level, each an mfaToken (one password login beforehand) and an unused recovery code")
	fs.IntVar(&c.passkeySteps, "passkey-steps", 1000, "passkey: measured requests per concurrency level, each a passkey login begun and signed beforehand")
	fs.Int64Var(&c.maxRequests, "max-requests", 1_000_000, "safety cap on requests per measured point")
	fs.DurationVar(&c.hashDuration, "hash-duration", 3*time.Second, "time for the raw argon2id hash-rate reference")
	fs.BoolVar(&c.reference, "reference", true, "measure the reference points (bare handler, argon2id rate); --reference=false skips them")
	fs.StringVar(&c.out, "out", "bench/results", "directory for the JSON and SVG results")
	fs.BoolVar(&c.quick, "quick", false, "smoke mode: concurrency 1,4; 1 s per point; 100 users (flags given explicitly still win)")
	fs.UintVar(&mem, "argon2-memory-kib", 19456, "argon2id memory (KiB), given to the started server and used for the reference")
	fs.UintVar(&iter, "argon2-iterations", 2, "argon2id iterations")
	fs.UintVar(&par, "argon2-parallelism", 1, "argon2id parallelism")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&c.manyTokens, "many-tokens", 2*verifiedCacheSize, "read-many: distinct access tokens the workers go round, minted by refreshing the pool's sessions (more than userd's verified-token cache of 10,000, so that reads miss it)")
	fs.StringVar(&c.profile, "profile", "", "directory for the started server's CPU and allocation profiles of each scenario at concurrency 16 (or the highest level below it), with `go tool pprof -top` summaries beside them")
	fs.StringVar(&c.render, "render", "", "print the table of a results JSON file and redraw its SVG beside it, then exit (nothing is measured)")
	fs.DurationVar(&c.quietWait, "quiet-wait", 0, "on a shared machine: before each point, wait up to this long for other processes to leave the CPU idle (0: don't wait)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.render != "" {
		if len(set) > 1 {
			return nil, usageError{"--render takes no other flags"}
		}
		return c, nil
	}
	if c.quick {
		if !set["concurrency"] {
			conc = "1,4"
		}
		if !set["duration"] {
			c.duration = time.Second
		}
		if !set["warmup"] {
			c.warmup = 200 * time.Millisecond
		}
		if !set["users"] {
			c.users = 100
		}
		if !set["hash-duration"] {
			c.hashDuration = time.Second
		}
		if !set["pool"] {
			c.pool = 16
		}
		if !set["mfa-steps"] {
			c.mfaSteps = 100
		}
		if !set["passkey-steps"] {
			c.passkeySteps = 200
		}
		if !set["many-tokens"] {
			// A smoke run: read-many works, but fits in the cache.
			c.manyTokens = 500
		}
	}

	var err error
	if c.concurrency, err = parseInts(conc); err != nil {
		return nil, usageError{"--concurrency: " + err.Error()}
	}
	c.scenarios = splitList(scen)
	if len(c.scenarios) == 0 {
		return nil, usageError{"--scenarios: none given"}
	}
	for _, s := range c.scenarios {
		if !slices.Contains(allScenarios, s) {
			return nil, usageError{fmt.Sprintf("--scenarios: unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ","))}
		}
	}
	switch {
	case c.users < 1:
		return nil, usageError{"--users must be at least 1"}
	case c.seedConc < 1:
		return nil, usageError{"--seed-concurrency must be at least 1"}
	case c.duration <= 0:
		return nil, usageError{"--duration must be positive"}
	case c.warmup < 0:
		return nil, usageError{"--warmup must not be negative"}
	case c.quietWait < 0:
		return nil, usageError{"--quiet-wait must not be negative"}
	case c.mfaSteps < 1 || c.passkeySteps < 1:
		return nil, usageError{"--mfa-steps and --passkey-steps must be at least 1"}
	case c.manyTokens < 1:
		return nil, usageError{"--many-tokens must be at least 1"}
	case c.maxRequests < 1:
		return nil, usageError{"--max-requests must be at least 1"}
	case mem < 8 || iter < 1 || par < 1 || par > 255 || mem > 1<<22 || iter > 1<<10:
		return nil, usageError{"--argon2-*: parameters out of range"}
	}
	c.argon = argonParams{MemoryKiB: uint32(mem), Iterations: uint32(iter), Parallelism: uint8(par)}
	// Each worker owns a session (its refresh-token chain), so the pool is
	// at least as large as the highest concurrency; beyond the number of
	// users it would only log the same users in again.
	c.pool = max(min(c.pool, c.users), slices.Max(c.concurrency))

	if c.target != "" {
		if c.profile != "" {
			return nil, usageError{"--profile needs a started server (its metrics listener serves the profiles): not with --target"}
		}
		if set["db"] || set["dsn"] || set["mysql-dsn"] || set["userd"] {
			return nil, usageError{"--target loads a running server: --db, --dsn, --mysql-dsn and --userd do not apply"}
		}
		if c.adminEmail == "" || c.adminPass == "" {
			return nil, usageError{"--target needs --admin-email and --admin-password"}
		}
		c.target = strings.TrimRight(c.target, "/")
		c.backends = []string{c.label}
		return c, nil
	}
	if set["admin-email"] || set["admin-password"] || set["pid"] || set["label"] {
		return nil, usageError{"--admin-email, --admin-password, --pid and --label apply to --target only"}
	}
	switch db {
	case "sqlite", "postgres", "mysql":
		c.backends = []string{db}
	case "both":
		c.backends = []string{"sqlite", "postgres"}
	case "all":
		// PostgreSQL before MySQL: MySQL's report compares its refresh
		// rate with PostgreSQL's (crossGoals).
		c.backends = []string{"sqlite", "postgres", "mysql"}
	default:
		return nil, usageError{fmt.Sprintf("--db: %q is not sqlite, postgres, mysql, both or all", db)}
	}
	if slices.Contains(c.backends, "postgres") {
		if c.dsn == "" {
			c.dsn = os.Getenv("USERD_TEST_POSTGRES_DSN")
		}
		if c.dsn == "" {
			return nil, usageError{"--db postgres needs --dsn (or USERD_TEST_POSTGRES_DSN)"}
		}
	}
	if slices.Contains(c.backends, "mysql") {
		if c.mysqlDSN == "" {
			c.mysqlDSN = os.Getenv("USERD_TEST_MYSQL_DSN")
		}
		if c.mysqlDSN == "" {
			return nil, usageError{"--db mysql needs --mysql-dsn (or USERD_TEST_MYSQL_DSN)"}
		}
	}
	return c, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("%q is not a number from 1 to 4096", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("none given")
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// run is the whole program; it returns one report per backend.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) ([]*Report, error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return nil, err
	}
	if cfg.render != "" {
		return renderFile(cfg.render, stdout)
	}
	began := time.Now()
	logf := func(format string, a ...any) {
		// Progress for a person watching; a lost line changes no figure.
		_, _ = fmt.Fprintf(stderr, "%6.1fs  "+format+"\n", append([]any{time.Since(began).Seconds()}, a...)...)
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil { //nolint:gosec // G301: the results directory (bench/results by default) is committed and read like the rest of the checkout
		return nil, fmt.Errorf("results directory: %w", err)
	}
	tmp, err := os.MkdirTemp("", "userd-load-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			logf("warning: temporary directory left behind: %v", err)
		}
	}()

	machine := describeMachine()
	if load := loadAverage(); load > 0.5*float64(machine.Cores) {
		logf("warning: the machine is busy (load average %.1f on %d cores): the figures will be low and noisy", load, machine.Cores)
	}
	binary := cfg.userdPath
	if cfg.target == "" && binary == "" {
		logf("building userd (commit %s)", machine.Commit)
		binary, err = buildUserd(ctx, tmp, machine.Commit)
		if err != nil {
			return nil, err
		}
	}
	if binary != "" {
		machine.identify(binary, cfg.userdPath == "")
	} else {
		// A running server's build is unknown to us.
		machine.Commit, machine.Dirty = "unknown", false
	}

	// The bare handler is measured once, with the first backend; the hash
	// rate once per backend, next to the scenarios that hash.
	bare := &Reference{}

	var reports []*Report
	for _, backend := range cfg.backends {
		if err := ctx.Err(); err != nil {
			return reports, err
		}
		rep, err := runBackend(ctx, cfg, backend, binary, tmp, machine, bare, logf)
		if err != nil {
			return reports, fmt.Errorf("%s: %w", backend, err)
		}
		rep.TotalSeconds = time.Since(began).Seconds()
		rep.Goals = append(rep.Goals, crossGoals(rep, reports)...)
		reports = append(reports, rep)
		stamp := rep.StartedAt.UTC().Format("20060102T150405Z")
		files, err := writeResults(cfg.out, stamp, rep)
		if err != nil {
			return reports, err
		}
		if err := printReport(stdout, rep); err != nil {
			return reports, err
		}
		if _, err := fmt.Fprintf(stdout, "\nwritten: %s\n\n", strings.Join(files, ", ")); err != nil {
			return reports, err
		}
	}
	logf("done in %.0f s", time.Since(began).Seconds())
	return reports, nil
}
