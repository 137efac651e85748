package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
)

func (r *root) keysRotateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rotate",
		Short: "add an access-token signing key; older keys retire later",
		Long: withConfigNote(`Add a new signing key for USERD_JWT_ALGORITHM. Every node signs with it
within 30 s; the older keys still verify until every token they signed has
expired, then retire.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.keys(cmd.Context(), true) },
	}
}

func (r *root) keysListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the signing keys: active, published, retired",
		Long:  withConfigNote(`List the access-token signing keys: active, published, retired.`),
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return r.keys(cmd.Context(), false) },
	}
}

// keys runs `userd keys rotate` (rotate) or `userd keys list` over the
// configured store, through the application's key use cases.
func (r *root) keys(ctx context.Context, rotate bool) error {
	cfg, err := loadConfig("keys: USERD_DB_DRIVER=memory keeps nothing; the keys live in the database of the nodes")
	if err != nil {
		return err
	}
	var (
		svc *application.Services
		log *slog.Logger
	)
	options := commandOptions(cfg, r.stderr, &svc, &log)
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		opts := jwtOptions(cfg, log)
		if rotate {
			return r.printRotated(ctx, svc.Keys, opts)
		}
		return r.printKeys(ctx, cfg, svc.Keys, opts)
	})
}

func (r *root) printRotated(ctx context.Context, keys *application.KeyService, opts jwtissuer.Options) error {
	key, err := keys.RotateAsOperator(ctx)
	if errors.Is(err, domain.ErrKeyConfigured) {
		return errors.New("keys rotate: the signing key is USERD_JWT_HMAC_SECRET, not stored; rotate it by changing that setting")
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(r.stdout, "created %s key %s\nevery node signs with it within %s; the older keys retire at %s\n",
		key.Algorithm, key.KID, jwtissuer.ReloadInterval, key.CreatedAt.Add(opts.RetireAfter()).UTC().Format(time.RFC3339))
	return err
}

func (r *root) printKeys(ctx context.Context, cfg config.Config, keys *application.KeyService, opts jwtissuer.Options) error {
	list, err := keys.ListAsOperator(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(r.stdout, "no access-token keys yet: `userd serve` or `userd keys rotate` creates one")
		return err
	}
	var table strings.Builder
	table.WriteString("KID\tALGORITHM\tCREATED\tSTATUS\tRETIRES\n")
	for _, k := range list {
		created, retires := k.CreatedAt.UTC().Format(time.RFC3339), "-"
		if k.Configured {
			created = "(USERD_JWT_HMAC_SECRET)"
		}
		if !k.RetiresAt.IsZero() {
			retires = k.RetiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\t%s\t%s\n", k.KID, k.Algorithm, created, k.Status, retires)
	}
	_, err = fmt.Fprintf(r.stdout, "%s\nactive signs; published verifies until it retires %s after the next key was created\n"+
		"(reload %s + USERD_ACCESS_TTL %s + leeway %s); ignored is not %s and never used.\n",
		columns(table.String(), 2), opts.RetireAfter(), jwtissuer.ReloadInterval, cfg.AccessTTL, jwtissuer.DefaultLeeway, cfg.JWTAlgorithm)
	return err
}
