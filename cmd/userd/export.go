package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

const exportHelp = `Export every user of the configured database as JSON lines, in the format
'userd users import' reads (one object per line, in id order):

  {"name":"Ada Lovelace","email":"ada@example.com","passwordHash":"$argon2id$...","profiles":["ROLE_CUSTOMER"],
   "emailVerified":true,"disabled":false,"metadata":{},"appMetadata":{}}

The lines hold the password hashes: whoever reads the file can try to guess
the passwords offline. With --output the file is created readable by its
owner only (mode 0600); an existing file is refused unless --force. By
default the lines go to standard output.

Second factors (TOTP, passkeys, recovery codes), sessions, personal access
tokens and identities at other providers are not exported: an imported user
signs in with the password alone, until it enrols a factor again. The
count of users with a second factor is said on standard error at the end,
as is the count of users without a password (made by a sign-in through
another provider or by email): an import makes them again without one, and
they sign in by a password reset, an email code or their provider. The ids and
creation times are not exported either: an import gives new ones.

Users are read 500 at a time, so the export holds no more in memory. A
count goes to standard error while it runs when that is a terminal.`

func (r *root) usersExportCommand() *cobra.Command {
	var (
		output string
		force  bool
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "export users, with their password hashes, as JSON lines that users import reads",
		Long:  withConfigNote(exportHelp),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErrorf("expected no arguments, got %d (the file is --output FILE)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if force && output == "" {
				return usageErrorf("--force needs --output FILE")
			}
			return r.exportUsers(cmd.Context(), output, force)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to `FILE`, created with mode 0600, instead of standard output")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite the --output file if it exists (truncated, mode 0600)")
	return cmd
}

// exportUsers runs `userd users export` over the configured store.
func (r *root) exportUsers(ctx context.Context, output string, force bool) (err error) {
	cfg, err := loadConfig("users export: USERD_DB_DRIVER=memory holds no users; export the SQLite or PostgreSQL database of the nodes")
	if err != nil {
		return err
	}
	out := r.stdout
	if output != "" {
		// Created before the store is opened: a refused file costs nothing.
		f, err := createExportFile(output, force)
		if err != nil {
			return fmt.Errorf("users export: %w", err)
		}
		defer func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("users export: %s: %w", output, cerr)
			}
		}()
		out = f
	}
	cfg.LogLevel = max(cfg.LogLevel, slog.LevelWarn)
	var svc *application.Services
	return withApp(ctx, cfg, commandOptions(cfg, r.stderr, &svc), func(ctx context.Context) error {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		report, err := writeExport(ctx, svc.Import, out, r.stderr)
		if err != nil {
			return fmt.Errorf("users export: %w (after %d users)", err, report.Users)
		}
		_, werr := fmt.Fprintln(r.stderr, exportSummary(report))
		return werr
	})
}

// createExportFile creates path with mode 0600, refusing an existing file
// unless force; then the file is truncated and set to 0600 again (it may
// have been readable by others).
func createExportFile(path string, force bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) //nolint:gosec // G304: the operator names the output file
	if errors.Is(err, fs.ErrExist) {
		if !force {
			return nil, fmt.Errorf("%s exists: pass --force to overwrite it, or choose another file", path)
		}
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o600) //nolint:gosec // G304: as above
		if err == nil {
			if err = f.Chmod(0o600); err != nil {
				_ = f.Close() // the chmod's error is the one to report
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// exportLine is one user as `users import` reads it (jsonKeys).
type exportLine struct {
	Name          string          `json:"name"`
	Email         string          `json:"email"`
	PasswordHash  string          `json:"passwordHash"`
	Profiles      []string        `json:"profiles"`
	EmailVerified bool            `json:"emailVerified"`
	Disabled      bool            `json:"disabled"`
	Metadata      json.RawMessage `json:"metadata"`
	AppMetadata   json.RawMessage `json:"appMetadata"`
}

// writeExport writes every user to w as a JSON line, with a count on
// stderr while it runs when that is a terminal.
func writeExport(ctx context.Context, svc *application.ImportService, w io.Writer, stderr io.Writer) (application.ExportReport, error) {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	// The hashes and the metadata as stored: "<" stays "<".
	enc.SetEscapeHTML(false)
	counting := isTerminal(stderr)
	n := 0
	report, err := svc.ExportUsers(ctx, func(u domain.User) error {
		n++
		if counting && n%500 == 0 {
			_, _ = fmt.Fprintf(stderr, "\rexporting: %d users", n) // for a person watching
		}
		return enc.Encode(exportLine{Name: u.Name, Email: u.Email.String(), PasswordHash: u.PasswordHash,
			Profiles: u.Profiles.Strings(), EmailVerified: u.EmailVerified, Disabled: u.Disabled,
			Metadata: u.Metadata.JSON(), AppMetadata: u.AppMetadata.JSON()})
	})
	if counting && n >= 500 {
		_, _ = fmt.Fprintln(stderr)
	}
	if err != nil {
		return report, err
	}
	return report, bw.Flush()
}

// exportSummary is what standard error says at the end of an export.
func exportSummary(r application.ExportReport) string {
	s := fmt.Sprintf("users export: %d users exported", r.Users)
	s += fmt.Sprintf("\nsecond factors and sessions are not exported: %d users had a second factor", r.WithSecondFactor)
	if r.WithoutPassword > 0 {
		s += fmt.Sprintf("\n%d users have no password (they signed in through another provider or by email): "+
			"users import makes them again without one; they sign in by reset, email code or a provider", r.WithoutPassword)
	}
	return s
}
