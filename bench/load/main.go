// Command userd-load measures userd under load and holds the figures
// against reference points taken in the same run on the same machine.
//
// With no flags it builds userd, starts it on a free 127.0.0.1 port with a
// SQLite database in a temporary directory, seeds 1,000 users through the
// API, logs in a pool of them and runs every scenario (read, me, list,
// read-many, create, login, refresh, mixed, mfa, passkey, the OpenID
// provider's oidc-flow, oidc-code-exchange, oidc-refresh,
// oidc-client-credentials and oidc-userinfo, reset, verify) at
// concurrency 1, 4, 16 and 64 for 3 s each; mfa and passkey instead send
// --mfa-steps and --passkey-steps requests a level, prepared beforehand
// (secondfactor.go), and oidc-code-exchange --oidc-code-steps (oidc.go).
// The reference points are a bare net/http handler that answers the same
// bytes as a user read, loaded the same way, and the raw argon2id hash
// rate on all cores. It prints one table and writes the same figures as
// JSON, and an SVG chart, into bench/results/.
//
//	go run ./bench/load                                   # SQLite, defaults
//	go run ./bench/load --quick                           # smoke run, well under a minute
//	go run ./bench/load --db postgres --dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//	go run ./bench/load --db all --mysql-dsn 'root@tcp(127.0.0.1:3306)/test'  # sqlite, postgres and mysql
//	go run ./bench/load --scenarios read,login --concurrency 16 --duration 10s
//	go run ./bench/load --scenarios read,mfa,passkey --concurrency 1,4   # second factors beside a read
//	go run ./bench/load --target http://127.0.0.1:8080 --admin-email E --admin-password P
//	go run ./bench/load --render bench/results/latest-sqlite.json   # table and chart again
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
var allScenarios = []string{"read", scReadUntraced, scReadTraced, "read-many", "me", scPATRead, "list", "create", "login", "refresh", "mixed", "mfa", "passkey",
	scOIDCFlow, scOIDCCodeExchange, scOIDCRefresh, scOIDCClientCredentials, scOIDCUserInfo, "reset", "verify",
	scEmailCodeRequest, scLoginHook, scRefreshHook}

// scEmailCodeRequest posts the seeded users' emails to POST
// /auth/email-code, as reset posts them to /auth/password-reset: a
// sign-in code by mail (docs/email-sign-in.md).
const scEmailCodeRequest = "email-code-request"

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
