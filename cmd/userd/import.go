package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/application"
)

const importHelp = `Import users whose passwords were hashed elsewhere, from CSV or JSON lines,
into the configured database (not USERD_DB_DRIVER=memory, which keeps
nothing). FILE '-' reads standard input, with --format.

CSV (RFC 4180, UTF-8) has a header row naming the columns, in any order:

  name,email,password_hash,profiles
  Ada Lovelace,ada@example.com,$2b$08$...,ROLE_CUSTOMER
  Grace Hopper,grace@example.com,"$argon2id$v=19$m=19456,t=2,p=1$...",ROLE_ADMIN|ROLE_CUSTOMER

JSON lines have one object per line, with exactly these keys:

  {"name":"Ada Lovelace","email":"ada@example.com","passwordHash":"$2b$08$...","profiles":["ROLE_CUSTOMER"]}

Profiles are ROLE_CUSTOMER and ROLE_ADMIN, at least one; in CSV separated
by '|' (or ';'). An argon2id hash holds commas: quote it in CSV. Password
hashes are bcrypt ($2a$, $2b$, $2y$) or argon2id PHC strings
($argon2id$v=19$m=...,t=...,p=...$salt$hash), checked strictly; they are
stored as given and replaced by an argon2id hash with the configured
parameters at each user's first login. A line without a password hash (an
empty password_hash cell, no passwordHash key or "") makes an account
without a password, as a sign-in through another provider or by email
makes one (users export writes them so): it signs in by a password reset,
an email code or its provider, and the summary counts them. Emails are normalised as at
registration. Each imported user is a user.created event of the audit
trail, with origin=import.

A hash costlier to check than one with the configured argon2id
(USERD_ARGON2_MEMORY_KIB, USERD_ARGON2_ITERATIONS, USERD_ARGON2_PARALLELISM)
is a bad line: every wrong guess at its account would hold a hashing slot
longer, and answer later than a guess at an unknown email. argon2id: m at
most the configured m, and m*t at most the configured m*t. bcrypt: cost c
when 128*2^c <= the configured m*t/p; with the defaults (m=19456, t=2,
p=1) up to cost 8, with m=65536, t=2 up to 10, with m=65536, t=8 up to 12.
To import costlier hashes, raise the configured cost first.

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

func (r *root) usersImportCommand() *cobra.Command {
	var (
		format string
		opts   application.ImportOptions
	)
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "import users with existing password hashes from CSV or JSON lines",
		Long:  withConfigNote(importHelp),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("expected one FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			switch {
			case format != "" && format != formatCSV && format != formatJSONL:
				return usageErrorf("--format %q: want csv or jsonl", format)
			case opts.BatchSize < 1 || opts.BatchSize > 10_000:
				return usageErrorf("--batch-size %d: want 1 to 10000", opts.BatchSize)
			case format == "" && file == "-":
				return usageErrorf("reading standard input needs --format csv or --format jsonl")
			}
			if format == "" {
				f, ok := formatFromName(file)
				if !ok {
					return usageErrorf("cannot tell the format of %s by its extension: pass --format csv or --format jsonl", file)
				}
				format = f
			}
			return r.importUsers(cmd.Context(), file, format, opts)
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the file's format, `csv|jsonl`; by default told by its extension (.csv; .jsonl or .ndjson)")
	cmd.Flags().BoolVar(&opts.SkipInvalid, "skip-invalid", false, "import the valid lines and report the invalid ones, instead of importing nothing")
	cmd.Flags().IntVar(&opts.BatchSize, "batch-size", application.DefaultImportBatchSize, "store `N` users per transaction, 1 to 10000")
	return cmd
}

// importUsers runs `userd users import` over the configured store.
func (r *root) importUsers(ctx context.Context, file, format string, opts application.ImportOptions) error {
	start := time.Now()
	cfg, err := loadConfig("users import: USERD_DB_DRIVER=memory keeps nothing; import into the SQLite or PostgreSQL database of the nodes")
	if err != nil {
		return err
	}
	records, err := readImportFile(r.stdin, file, format)
	if err != nil {
		return fmt.Errorf("users import: %s: %w", file, err)
	}

	// The service's info lines (database ready, users imported) would only
	// interleave with the progress; warnings and errors still show.
	cfg.LogLevel = max(cfg.LogLevel, slog.LevelWarn)
	var svc *application.Services
	options := commandOptions(cfg, r.stderr, &svc)
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		// Ctrl-C stops between two batches; the batches stored stay.
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		bar := newProgress(r.stderr)
		opts.Progress = bar.update
		report, err := svc.Import.ImportUsers(ctx, records, opts)
		bar.done()

		// Before lineErrorText, which renames the fields for CSV.
		costlier := costlierHashes(report)
		for _, le := range report.Invalid {
			// Messages for the operator; the import's outcome is in the
			// error returned, which a lost message does not change.
			_, _ = fmt.Fprintln(r.stderr, lineErrorText(le, format))
		}
		if costlier {
			_, _ = fmt.Fprintln(r.stderr, costlierHint)
		}
		_, werr := fmt.Fprintln(r.stdout, importSummary(file, report, opts, err, time.Since(start)))
		if err := importError(report, err); err != nil {
			return err
		}
		return werr
	})
}

// importError is the error of an import that did not import everything
// it should have, saying what was imported and what to do next.
func importError(report application.ImportReport, err error) error {
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
func readImportFile(stdin io.Reader, file, format string) ([]application.ImportRecord, error) {
	r := stdin
	if file != "-" {
		f, err := os.Open(file) //nolint:gosec // G304: the operator names the import file on the command line; reading it is the command's job
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only: closing loses nothing
		r = f
	}
	if r == nil {
		r = strings.NewReader("")
	}
	return readRecords(r, format)
}

// costlierHint follows the lines refused for a hash above the ceiling.
const costlierHint = `users import: hashes costlier to check than one with the configured argon2id are refused;
to import them, raise USERD_ARGON2_MEMORY_KIB and/or USERD_ARGON2_ITERATIONS to the cost they need
(see "userd users import --help" and docs/operations.md, "Importing users")`

// costlierHashes reports whether a line was refused for a hash above the
// ceiling of the configured cost.
func costlierHashes(r application.ImportReport) bool {
	for _, le := range r.Invalid {
		for _, f := range le.Fields {
			if f.Field == application.ImportFieldPasswordHash && strings.HasPrefix(f.Message, passwordhash.ErrCostlierHash.Error()) {
				return true
			}
		}
	}
	return false
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
// "users.csv: 10000 lines: 9998 imported, 2 skipped, 0 failed, in 1.2s",
// with how many of those imported have no password when some have none.
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
	if r.WithoutPassword > 0 {
		s += fmt.Sprintf(", %d without a password: they sign in by reset, email code or a provider", r.WithoutPassword)
	}
	return s + ", in " + took.String()
}
