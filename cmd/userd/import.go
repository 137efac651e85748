package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/fx"

	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

const importHelp = `Import users whose passwords were hashed elsewhere, from CSV or JSON lines,
into the configured database (not USERD_DB_DRIVER=memory, which keeps
nothing). FILE '-' reads standard input, with --format.

CSV (RFC 4180, UTF-8) has a header row naming the columns, in any order:

  name,email,password_hash,profiles
  Ada Lovelace,ada@example.com,$2b$12$...,ROLE_CUSTOMER
  Grace Hopper,grace@example.com,"$argon2id$v=19$m=19456,t=2,p=1$...",ROLE_ADMIN|ROLE_CUSTOMER

JSON lines have one object per line, with exactly these keys:

  {"name":"Ada Lovelace","email":"ada@example.com","passwordHash":"$2b$12$...","profiles":["ROLE_CUSTOMER"]}

Profiles are ROLE_CUSTOMER and ROLE_ADMIN, at least one; in CSV separated
by '|' (or ';'). An argon2id hash holds commas: quote it in CSV. Password hashes are bcrypt ($2a$, $2b$, $2y$, cost 4 to
16) or argon2id PHC strings ($argon2id$v=19$m=...,t=...,p=...$salt$hash),
checked strictly; they are stored as given and replaced by an argon2id
hash with the configured parameters at each user's first login. Emails are
normalised as at registration. Each imported user is a user.created event
of the audit trail, with origin=import.

Every line is checked first, emails included (once per file, not
registered yet). By default one bad line imports nothing: each is reported
as 'line 17: email: must contain @' and the exit code is 1. With
--skip-invalid the good lines are imported and the bad ones reported (exit
code 0). Users are stored in transactions of --batch-size: an interrupted
import (a store failure, Ctrl-C) keeps the batches done and says up to
which line; run the same file again with --skip-invalid to import the rest,
the lines imported already then being reported as already registered.

Progress goes to standard error (a bar on a terminal), the summary to
standard output.`

// importSetup declares the flags of `users import`.
func importSetup(fs *flag.FlagSet) runner {
	format := fs.String("format", "", "the file's format, `csv|jsonl`; by default told by its extension (.csv; .jsonl or .ndjson)")
	skip := fs.Bool("skip-invalid", false, "import the valid lines and report the invalid ones, instead of importing nothing")
	batch := fs.Int("batch-size", application.DefaultImportBatchSize, "store `N` users per transaction, 1 to 10000")
	return func(c *cli, args []string) error {
		const name = "users import"
		if len(args) != 1 {
			return usageErrorf(name, "%s: expected one FILE, got %d arguments", name, len(args))
		}
		file := args[0]
		switch {
		case *format != "" && *format != formatCSV && *format != formatJSONL:
			return usageErrorf(name, "%s: --format %q: want csv or jsonl", name, *format)
		case *batch < 1 || *batch > 10_000:
			return usageErrorf(name, "%s: --batch-size %d: want 1 to 10000", name, *batch)
		case *format == "" && file == "-":
			return usageErrorf(name, "%s: reading standard input needs --format csv or --format jsonl", name)
		}
		if *format == "" {
			f, ok := formatFromName(file)
			if !ok {
				return usageErrorf(name, "%s: cannot tell the format of %s by its extension: pass --format csv or --format jsonl", name, file)
			}
			*format = f
		}
		return importUsers(c, file, *format, application.ImportOptions{SkipInvalid: *skip, BatchSize: *batch})
	}
}

// importUsers runs `userd users import` over the configured store.
func importUsers(c *cli, file, format string, opts application.ImportOptions) error {
	start := time.Now()
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	if cfg.DBDriver == config.DriverMemory {
		return errors.New("users import: USERD_DB_DRIVER=memory keeps nothing; import into the SQLite or PostgreSQL database of the nodes")
	}
	records, err := readImportFile(c, file, format)
	if err != nil {
		return fmt.Errorf("users import: %s: %w", file, err)
	}

	// The service's info lines (database ready, users imported) would only
	// interleave with the progress; warnings and errors still show.
	logCfg := cfg
	logCfg.LogLevel = max(cfg.LogLevel, slog.LevelWarn)
	var (
		users  ports.UserRepository
		hasher ports.PasswordHasher
		clk    ports.Clock
		log    *slog.Logger
		events *application.Events
	)
	app := fx.New(fx.NopLogger, baseModule(logCfg, c.stderr), storeModule(cfg), appModule,
		fx.Populate(&users, &hasher, &clk, &log, &events))
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	defer func() { _ = app.Stop(context.Background()) }()

	// Ctrl-C stops between two batches; the batches stored stay.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bar := newProgress(c.stderr)
	opts.Progress = bar.update
	svc := application.NewImportService(users, hasher, clk, log, application.ImportEvents(events))
	report, err := svc.ImportUsers(ctx, records, opts)
	bar.done()

	for _, le := range report.Invalid {
		fmt.Fprintln(c.stderr, lineErrorText(le, format))
	}
	fmt.Fprintln(c.stdout, importSummary(file, report, opts, err, time.Since(start)))
	switch {
	case errors.Is(err, application.ErrImportRefused) && len(report.Invalid) == report.Total:
		return fmt.Errorf("users import: every one of the %d lines is invalid; nothing was imported", report.Total)
	case errors.Is(err, application.ErrImportRefused):
		return fmt.Errorf("users import: %d of %d lines are invalid; nothing was imported (fix them, or pass --skip-invalid to import the %d others)",
			len(report.Invalid), report.Total, report.Total-len(report.Invalid))
	case err != nil && report.Imported > 0:
		return fmt.Errorf("users import: %w; the lines up to %d are imported: run the same file again with --skip-invalid to import the rest",
			err, report.LastImportedLine)
	case err != nil:
		return fmt.Errorf("users import: %w; nothing was imported", err)
	}
	return nil
}

// readImportFile reads the records of file, or of standard input for "-".
func readImportFile(c *cli, file, format string) ([]application.ImportRecord, error) {
	var r io.Reader = c.stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	if r == nil {
		r = strings.NewReader("")
	}
	return readRecords(r, format)
}

// lineErrorText is le as the user wrote the file: in CSV the hash column
// is password_hash.
func lineErrorText(le application.ImportLineError, format string) string {
	if format == formatCSV {
		for i, f := range le.Fields {
			if f.Field == application.ImportFieldPasswordHash {
				le.Fields[i].Field = "password_hash"
			}
		}
	}
	return le.Error()
}

// importSummary is the last line of an import:
// "users.csv: 10000 lines: 9998 imported, 2 skipped, 0 failed, in 1.2s".
func importSummary(file string, r application.ImportReport, opts application.ImportOptions, err error, elapsed time.Duration) string {
	head := fmt.Sprintf("%s: %d lines: ", file, r.Total)
	took := elapsed.Round(time.Millisecond)
	if errors.Is(err, application.ErrImportRefused) {
		return head + fmt.Sprintf("0 imported, %d invalid, nothing written, in %s", len(r.Invalid), took)
	}
	s := head + fmt.Sprintf("%d imported, %d skipped, %d failed", r.Imported, r.Skipped, r.Failed)
	if !opts.SkipInvalid && len(r.Invalid) > 0 {
		s += fmt.Sprintf(", %d invalid", len(r.Invalid))
	}
	return s + ", in " + took.String()
}
