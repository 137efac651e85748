package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
)

func (r *root) migrateUpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "up",
		Short: "apply pending schema migrations",
		Long:  withConfigNote(`Apply the pending schema migrations, then list them all as 'migrate status' does.`),
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return r.migrate(cmd.Context(), true) },
	}
}

func (r *root) migrateStatusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "list the schema migrations, applied or pending",
		Long:  withConfigNote(`List the schema migrations, applied (and when) or pending.`),
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return r.migrate(cmd.Context(), false) },
	}
}

// migrate runs `userd migrate up` (up) or `userd migrate status` on the
// bare database: whatever USERD_DB_AUTO_MIGRATE says, only up migrates.
func (r *root) migrate(ctx context.Context, up bool) error {
	cfg, err := loadConfig("migrate: USERD_DB_DRIVER=memory has no schema")
	if err != nil {
		return err
	}
	var db *gormstore.DB
	options := fx.Options(baseModule(cfg, r.stderr), databaseModule, fx.Populate(&db))
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		if up {
			if err := db.Migrate(ctx); err != nil {
				return err
			}
		}
		states, err := db.MigrationStatus(ctx)
		if err != nil {
			return err
		}
		for _, s := range states {
			state := "pending"
			if s.Applied {
				state = "applied " + s.AppliedAt.UTC().Format(time.RFC3339)
			}
			if _, err := fmt.Fprintf(r.stdout, "%04d  %-32s  %s\n", s.Version, s.Name, state); err != nil {
				return err
			}
		}
		return nil
	})
}
