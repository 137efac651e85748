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
refresh-token HMAC key, the users' TOTP secrets, the identity providers'
client secrets) so that it is sealed under the first key of
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
		db   *gormstore.DB
		keys *gormstore.KeyStore
		mfa  *gormstore.MFAStore
		idps *gormstore.IdentityProviderStore
		box  *secretbox.Box
	)
	start := func(lc fx.Lifecycle, p storeStart) { startStore(lc, p, false) }
	options := fx.Options(baseModule(cfg, r.stderr), secretsModule, sqlModule, fx.Invoke(start), fx.Populate(&db, &keys, &mfa, &idps, &box))
	return withApp(ctx, cfg, options, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		// One transaction: every secret moves to the new key, or none
		// does. The re-encryptions inside it leave the checkpoint that
		// clears the old values out of a SQLite file to after the commit.
		n := 0
		err := db.WithinTx(ctx, func(ctx context.Context) error {
			nKeys, err := keys.Reencrypt(ctx)
			if err != nil {
				return err
			}
			nTOTP, err := mfa.Reencrypt(ctx)
			if err != nil {
				return err
			}
			nIDPs, err := idps.Reencrypt(ctx)
			n = nKeys + nTOTP + nIDPs
			return err
		})
		if err != nil {
			return secretKeyHint(err)
		}
		if n > 0 {
			if err := db.Checkpoint(ctx); err != nil {
				return err
			}
		}
		_, err = fmt.Fprintf(r.stdout, "re-encrypted %d secrets under key %s\n", n, box.CurrentKeyID())
		return err
	})
}
