package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	// oidcCodeSteps is how many codes a point of oidc-code-exchange
	// exchanges.
	oidcCodeSteps int
	// oidcIDTokenAlg is the public client's idTokenSigningAlg.
	oidcIDTokenAlg string
	hashDuration   time.Duration
	reference      bool
	out            string
	quick          bool
	argon          argonParams
	timeout        time.Duration
	quietWait      time.Duration
	render         string
	manyTokens     int
	profile        string
}

// argonParams are the argon2id parameters given to the started server and
// used for the raw hash-rate reference.
type argonParams struct {
	MemoryKiB   uint32 `json:"memory_kib"`
	Iterations  uint32 `json:"iterations"`
	Parallelism uint8  `json:"parallelism"`
}

// flagValues are the flags that parseFlags turns into config fields of
// other types.
type flagValues struct {
	db, scenarios, concurrency string
	mem, iter, par             uint
}

// parseFlags reads the command line into a config: the defaults of
// --quick for what is not given, every value checked, the backends chosen.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	f := &flagValues{}
	fs := flag.NewFlagSet("userd-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defineFlags(fs, c, f)
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
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if c.render != "" {
		if len(set) > 1 {
			return nil, usageError{"--render takes no other flags"}
		}
		return c, nil
	}
	if c.quick {
		quickDefaults(c, f, set)
	}
	if err := c.settle(f); err != nil {
		return nil, err
	}
	if c.target != "" {
		if err := c.checkTarget(set); err != nil {
			return nil, err
		}
		return c, nil
	}
	if set["admin-email"] || set["admin-password"] || set["pid"] || set["label"] {
		return nil, usageError{"--admin-email, --admin-password, --pid and --label apply to --target only"}
	}
	if err := c.chooseBackends(f.db); err != nil {
		return nil, err
	}
	return c, nil
}

// defineFlags defines every flag of the command on fs, into c and f.
func defineFlags(fs *flag.FlagSet, c *config, f *flagValues) {
	fs.StringVar(&c.userdPath, "userd", "", "userd binary to start (default: build ./cmd/userd into a temporary directory)")
	fs.StringVar(&c.target, "target", "", "load an already running userd at this base URL instead of starting one (needs --admin-email and --admin-password)")
	fs.StringVar(&c.adminEmail, "admin-email", "", "admin email for --target (a started server gets its own bootstrap admin)")
	fs.StringVar(&c.adminPass, "admin-password", "", "admin password for --target")
	fs.IntVar(&c.pid, "pid", 0, "with --target: the server's process id, to report its RSS and CPU (Linux /proc)")
	fs.StringVar(&c.label, "label", "target", "with --target: the backend name used in the table and file names")
	fs.StringVar(&f.db, "db", "sqlite", "backend of the started server: sqlite, postgres, mysql, both (sqlite and postgres) or all (the three)")
	fs.StringVar(&c.dsn, "dsn", "", "PostgreSQL DSN for --db postgres|both|all (default $USERD_TEST_POSTGRES_DSN); each run uses a fresh schema, dropped afterwards")
	fs.StringVar(&c.mysqlDSN, "mysql-dsn", "", "MySQL/MariaDB DSN (user:password@tcp(host:port)/database) for --db mysql|all (default $USERD_TEST_MYSQL_DSN); each run uses a fresh database beside it, dropped afterwards")
	fs.IntVar(&c.users, "users", 1000, "users to seed through the API (each create hashes a password: ~10 s per 1,000 on 2 cores)")
	fs.IntVar(&c.pool, "pool", 256, "users logged in before the scenarios, whose tokens the workers use (at least the highest concurrency)")
	fs.IntVar(&c.seedConc, "seed-concurrency", 2*runtime.NumCPU(), "concurrent requests while seeding and logging in the pool")
	fs.StringVar(&f.scenarios, "scenarios", strings.Join(allScenarios, ","), "scenarios to run, comma-separated: "+strings.Join(allScenarios, ","))
	fs.StringVar(&f.concurrency, "concurrency", "1,4,16,64", "concurrency levels (closed-loop workers), comma-separated")
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "measured time per scenario and concurrency level")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "unmeasured warm-up before each measured point")
	fs.IntVar(&c.mfaSteps, "mfa-steps", 400, "mfa: measured requests per concurrency level, each an mfaToken (one password login beforehand) and an unused recovery code")
	fs.IntVar(&c.passkeySteps, "passkey-steps", 1000, "passkey: measured requests per concurrency level, each a passkey login begun and signed beforehand")
	fs.IntVar(&c.oidcCodeSteps, "oidc-code-steps", 1000, "oidc-code-exchange: measured code exchanges per concurrency level, each code made beforehand by an authorization request and its continuation (a code lives 60 s: a point ends 50 s after its first code was made)")
	fs.StringVar(&c.oidcIDTokenAlg, "oidc-id-token-alg", "RS256", "the OpenID scenarios' public client signs its ID tokens with RS256 (the default of a client) or EdDSA")
	fs.Int64Var(&c.maxRequests, "max-requests", 1_000_000, "safety cap on requests per measured point")
	fs.DurationVar(&c.hashDuration, "hash-duration", 3*time.Second, "time for the raw argon2id hash-rate reference")
	fs.BoolVar(&c.reference, "reference", true, "measure the reference points (bare handler, argon2id rate); --reference=false skips them")
	fs.StringVar(&c.out, "out", "bench/results", "directory for the JSON and SVG results")
	fs.BoolVar(&c.quick, "quick", false, "smoke mode: concurrency 1,4; 1 s per point; 100 users (flags given explicitly still win)")
	fs.UintVar(&f.mem, "argon2-memory-kib", 19456, "argon2id memory (KiB), given to the started server and used for the reference")
	fs.UintVar(&f.iter, "argon2-iterations", 2, "argon2id iterations")
	fs.UintVar(&f.par, "argon2-parallelism", 1, "argon2id parallelism")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.IntVar(&c.manyTokens, "many-tokens", 2*verifiedCacheSize, "read-many: distinct access tokens the workers go round, minted by refreshing the pool's sessions (more than userd's verified-token cache of 10,000, so that reads miss it)")
	fs.StringVar(&c.profile, "profile", "", "directory for the started server's CPU and allocation profiles of each scenario at concurrency 16 (or the highest level below it), with `go tool pprof -top` summaries beside them")
	fs.StringVar(&c.render, "render", "", "print the table of a results JSON file and redraw its SVG beside it, then exit (nothing is measured)")
	fs.DurationVar(&c.quietWait, "quiet-wait", 0, "on a shared machine: before each point, wait up to this long for other processes to leave the CPU idle (0: don't wait)")
}

// quickDefaults are the --quick smoke run's settings, for each flag not
// given explicitly.
func quickDefaults(c *config, f *flagValues, set map[string]bool) {
	if !set["concurrency"] {
		f.concurrency = "1,4"
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
	if !set["oidc-code-steps"] {
		c.oidcCodeSteps = 200
	}
	if !set["many-tokens"] {
		// A smoke run: read-many works, but fits in the cache.
		c.manyTokens = 500
	}
}

// settle parses the lists of f into c, checks every number, and sizes the
// pool.
func (c *config) settle(f *flagValues) error {
	var err error
	if c.concurrency, err = parseInts(f.concurrency); err != nil {
		return usageError{"--concurrency: " + err.Error()}
	}
	c.scenarios = splitList(f.scenarios)
	if len(c.scenarios) == 0 {
		return usageError{"--scenarios: none given"}
	}
	for _, s := range c.scenarios {
		if !slices.Contains(allScenarios, s) {
			return usageError{fmt.Sprintf("--scenarios: unknown scenario %q (known: %s)", s, strings.Join(allScenarios, ","))}
		}
	}
	switch {
	case c.users < 1:
		return usageError{"--users must be at least 1"}
	case c.seedConc < 1:
		return usageError{"--seed-concurrency must be at least 1"}
	case c.duration <= 0:
		return usageError{"--duration must be positive"}
	case c.warmup < 0:
		return usageError{"--warmup must not be negative"}
	case c.quietWait < 0:
		return usageError{"--quiet-wait must not be negative"}
	case c.mfaSteps < 1 || c.passkeySteps < 1 || c.oidcCodeSteps < 1:
		return usageError{"--mfa-steps, --passkey-steps and --oidc-code-steps must be at least 1"}
	case c.manyTokens < 1:
		return usageError{"--many-tokens must be at least 1"}
	case c.oidcIDTokenAlg != "RS256" && c.oidcIDTokenAlg != "EdDSA":
		return usageError{"--oidc-id-token-alg: RS256 or EdDSA"}
	case c.maxRequests < 1:
		return usageError{"--max-requests must be at least 1"}
	case f.mem < 8 || f.iter < 1 || f.par < 1 || f.par > 255 || f.mem > 1<<22 || f.iter > 1<<10:
		return usageError{"--argon2-*: parameters out of range"}
	}
	c.argon = argonParams{MemoryKiB: uint32(f.mem), Iterations: uint32(f.iter), Parallelism: uint8(f.par)}
	// Each worker owns a session (its refresh-token chain), so the pool is
	// at least as large as the highest concurrency; beyond the number of
	// users it would only log the same users in again.
	c.pool = max(min(c.pool, c.users), slices.Max(c.concurrency))
	return nil
}

// checkTarget checks the flags of a run against an already running
// server, which is its one backend.
func (c *config) checkTarget(set map[string]bool) error {
	if c.profile != "" {
		return usageError{"--profile needs a started server (its metrics listener serves the profiles): not with --target"}
	}
	if set["db"] || set["dsn"] || set["mysql-dsn"] || set["userd"] {
		return usageError{"--target loads a running server: --db, --dsn, --mysql-dsn and --userd do not apply"}
	}
	if c.adminEmail == "" || c.adminPass == "" {
		return usageError{"--target needs --admin-email and --admin-password"}
	}
	c.target = strings.TrimRight(c.target, "/")
	c.backends = []string{c.label}
	return nil
}

// chooseBackends sets the backends of --db, with the DSN each database
// server needs.
func (c *config) chooseBackends(db string) error {
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
		return usageError{fmt.Sprintf("--db: %q is not sqlite, postgres, mysql, both or all", db)}
	}
	if slices.Contains(c.backends, "postgres") {
		if c.dsn == "" {
			c.dsn = os.Getenv("USERD_TEST_POSTGRES_DSN")
		}
		if c.dsn == "" {
			return usageError{"--db postgres needs --dsn (or USERD_TEST_POSTGRES_DSN)"}
		}
	}
	if slices.Contains(c.backends, "mysql") {
		if c.mysqlDSN == "" {
			c.mysqlDSN = os.Getenv("USERD_TEST_MYSQL_DSN")
		}
		if c.mysqlDSN == "" {
			return usageError{"--db mysql needs --mysql-dsn (or USERD_TEST_MYSQL_DSN)"}
		}
	}
	return nil
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
