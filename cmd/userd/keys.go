package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
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

// keyDeps are what the key commands use of the app.
type keyDeps struct {
	store ports.KeyStore
	clock ports.Clock
	log   *slog.Logger
	audit *application.AuditService
}

// keys runs `userd keys rotate` (rotate) or `userd keys list` over the
// configured store.
func (r *root) keys(ctx context.Context, rotate bool) error {
	cfg, err := loadConfig("keys: USERD_DB_DRIVER=memory keeps nothing; the keys live in the database of the nodes")
	if err != nil {
		return err
	}
	if rotate && cfg.JWTHMACSecret != "" {
		return errors.New("keys rotate: the signing key is USERD_JWT_HMAC_SECRET, not stored; rotate it by changing that setting")
	}
	var k keyDeps
	options := commandOptions(cfg, r.stderr, &k.store, &k.clock, &k.log, &k.audit)
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		if rotate {
			return r.printRotated(ctx, cfg, k)
		}
		return r.printKeys(ctx, cfg, k)
	})
}

// rotateKey adds a signing key and records it in the audit trail. It is
// to become the application's key-rotation use case, which the admin
// pages will call too.
func rotateKey(ctx context.Context, k keyDeps, opts jwtissuer.Options) (jwtissuer.KeyInfo, error) {
	key, err := jwtissuer.Rotate(ctx, k.store, k.clock, opts)
	if err != nil {
		return jwtissuer.KeyInfo{}, err
	}
	// The key is in use either way; a lost audit event is logged, not fatal.
	_ = k.audit.KeyRotated(ctx, key.KID, key.Algorithm)
	return key, nil
}

func (r *root) printRotated(ctx context.Context, cfg config.Config, k keyDeps) error {
	opts := jwtOptions(cfg, k.log)
	key, err := rotateKey(ctx, k, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "created %s key %s\nevery node signs with it within %s; the older keys retire at %s\n",
		key.Algorithm, key.KID, jwtissuer.ReloadInterval, key.CreatedAt.Add(opts.RetireAfter()).UTC().Format(time.RFC3339))
	return nil
}

func (r *root) printKeys(ctx context.Context, cfg config.Config, k keyDeps) error {
	opts := jwtOptions(cfg, k.log)
	list, err := jwtissuer.ListKeys(ctx, k.store, k.clock, opts)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(r.stdout, "no access-token keys yet: `userd serve` or `userd keys rotate` creates one")
		return nil
	}
	tw := tabwriter.NewWriter(r.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KID\tALGORITHM\tCREATED\tSTATUS\tRETIRES")
	for _, k := range list {
		created, retires := k.CreatedAt.UTC().Format(time.RFC3339), "-"
		if k.Configured {
			created = "(USERD_JWT_HMAC_SECRET)"
		}
		if !k.RetiresAt.IsZero() {
			retires = k.RetiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.KID, k.Algorithm, created, k.Status, retires)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(r.stdout, "\nactive signs; published verifies until it retires %s after the next key was created\n"+
		"(reload %s + USERD_ACCESS_TTL %s + leeway %s); ignored is not %s and never used.\n",
		opts.RetireAfter(), jwtissuer.ReloadInterval, cfg.AccessTTL, jwtissuer.DefaultLeeway, cfg.JWTAlgorithm)
	return nil
}
