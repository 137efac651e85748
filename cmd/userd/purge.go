package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func (r *root) purgeCommand() *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "delete the expired and used rows now (what the housekeeping of serve does)",
		Long: withConfigNote(`Make one pass of the housekeeping that userd serve makes every
USERD_PURGE_INTERVAL: delete, in batches, the sessions past their end (with
their refresh tokens), the used or expired links, mfaTokens and passkey
ceremonies, the lapsed login-failure counters, the outbox messages past
their give-up age, and the audit events older than USERD_AUDIT_RETENTION.
Print, for each kind, the time before which its rows are stale and how
many went. With --dry-run, count them and delete nothing.
A pass (not a dry run) takes the lock that keeps the housekeeping to one
node at a time, and
exits 1 when a node holds it.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.purge(cmd.Context(), dryRun) },
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count the rows that would go; delete nothing")
	return cmd
}

// purgeTimeout bounds a pass of `userd purge`: deleting a million expired
// sessions takes under a minute (see docs/performance.md).
const purgeTimeout = time.Hour

func (r *root) purge(ctx context.Context, dryRun bool) error {
	cfg, err := loadConfig("purge: USERD_DB_DRIVER=memory keeps nothing to purge; the rows live in the database of the nodes")
	if err != nil {
		return err
	}
	var svc *application.Services
	return withApp(ctx, cfg, commandOptions(cfg, r.stderr, &svc), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
		defer cancel()
		run, head := svc.Housekeeping.RunOnce, "PURGED"
		if dryRun {
			run, head = svc.Housekeeping.DryRun, "WOULD GO"
		}
		report, err := run(ctx)
		if report.Locked {
			return errors.New("purge: another node is purging now (it holds the housekeeping lock); try again later")
		}
		// What went is printed even when a kind failed: those rows are gone.
		var b strings.Builder
		fmt.Fprintf(&b, "KIND\tSTALE BEFORE\t%s\n", head)
		for _, k := range report.Kinds {
			fmt.Fprintf(&b, "%s\t%s\t%d\n", k.Kind, k.Cutoff.UTC().Format(time.RFC3339), k.Rows)
		}
		if cfg.AuditRetention == 0 {
			fmt.Fprintf(&b, "%s\tnever (USERD_AUDIT_RETENTION=0)\t0\n", domain.PurgeAuditEvents)
		}
		fmt.Fprintf(&b, "total\t\t%d\n", report.Total())
		if _, werr := fmt.Fprint(r.stdout, columns(b.String(), 2)); werr != nil {
			return werr
		}
		if err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		return nil
	})
}
