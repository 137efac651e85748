package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// defaultMemoryLimit is the Go runtime's soft memory limit when GOMEMLIMIT
// is not set. Each password hash allocates 19 MiB that is garbage a moment
// later; with only the default GOGC the heap target doubles that churn, and
// RSS under logins sits far above what is live. Near the limit the
// collector runs sooner instead (docs/performance.md, "What the tuning
// changed"). It is soft: a larger live heap is never refused, only
// collected more eagerly.
const defaultMemoryLimit = 96 << 20

// defaultGCPercent is the collector's GOGC when the GOGC variable is not
// set. The argon2id memory of the hasher (19 MiB a hash slot) is reused
// from hash to hash and so counts as live heap; with GOGC's default of
// 100 the collector let as much garbage again pile up before a cycle.
// Those blocks hold no pointers, so a cycle costs what the small live heap
// costs: at 25 the mixed load's peak RSS fell and its req/s did not
// (docs/performance.md, "Login and memory").
const defaultGCPercent = 25

func (r *root) serveCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "run the HTTP server (the default command)",
		Long: withConfigNote(`Serve the API on USERD_HTTP_ADDR until SIGINT or SIGTERM, then stop
gracefully within USERD_SHUTDOWN_TIMEOUT. On a SQL database the schema is
migrated first unless USERD_DB_AUTO_MIGRATE=false.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.serve(cmd.Context()) },
	}
}

// serve runs the server until SIGINT or SIGTERM.
func (r *root) serve(ctx context.Context) error {
	cfg, err := loadConfig("")
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
		defer startGCTuner(gcHeadroom)()
	}
	return withApp(ctx, cfg, serverOptions(cfg, r.stderr), func(ctx context.Context) error {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-ctx.Done()
		return nil
	})
}
