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
// is not set. Near the limit the collector runs sooner rather than let
// garbage pile up to the heap target (docs/performance.md, "What the
// tuning changed"). It is soft: a larger live heap is never refused, only
// collected more eagerly. It bounds the Go runtime's memory only: the
// password hasher's argon2id blocks (19 MiB a hash slot) are mapped
// outside the heap, so that a machine of many CPUs, and so of many slots,
// does not pass it with them alone.
const defaultMemoryLimit = 96 << 20

// defaultGCPercent is the collector's GOGC when the GOGC variable is not
// set, and the floor of the tuner (gctuner.go). It was chosen when the
// hasher's argon2id blocks were in the heap, where GOGC's default of 100
// let as much garbage again as they held pile up before a cycle: at 25
// the mixed load's peak RSS fell and its req/s did not (docs/performance.md,
// "Login and memory"). The blocks are mapped outside the heap now; the
// floor still bounds the garbage over a large live heap (full caches).
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
