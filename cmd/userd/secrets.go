package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/secretbox"
)

func (r *root) secretsReencryptCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "reencrypt",
		Short: "re-seal every stored secret under the first USERD_SECRET_KEY",
		Long: withConfigNote(`Rewrite every secret kept in the database (the token-signing keys, the
refresh-token HMAC key) so that it is sealed under the first key of
USERD_SECRET_KEY, in one transaction, and print how many rows changed.
Secrets stored in clear by an earlier version are sealed too. Run it after
putting a new key first on every node; then the older keys can be removed.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.reencrypt(cmd.Context()) },
	}
}

// reencrypt runs `userd secrets reencrypt` on the SQL store. The store's
// start step that seals clear keys is left out: the command seals them
// itself, and counts them.
func (r *root) reencrypt(ctx context.Context) error {
	cfg, err := loadConfig("secrets: USERD_DB_DRIVER=memory keeps nothing; the secrets live in the database of the nodes")
	if err != nil {
		return err
	}
	var (
		keys *gormstore.KeyStore
		box  *secretbox.Box
	)
	options := fx.Options(baseModule(cfg, r.stderr), secretsModule, sqlModule, fx.Populate(&keys, &box))
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		n, err := keys.Reencrypt(ctx)
		if err != nil {
			return secretKeyHint(err)
		}
		_, err = fmt.Fprintf(r.stdout, "re-encrypted %d secrets under key %s\n", n, box.CurrentKeyID())
		return err
	})
}
