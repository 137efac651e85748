package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	var now bool
	cmd := &cobra.Command{
		Use:   "rotate",
		Short: "add signing keys (access tokens, OpenID provider); they sign once published, older keys retire later",
		Long: withConfigNote(`Add a new access-token signing key for USERD_JWT_ALGORITHM and, while the
OpenID provider is on (USERD_OIDC_PROVIDER), a new RS256 key of the
provider, which signs ID tokens: both rotate together. Every node publishes
them in /.well-known/jwks.json within 30 s, and they sign from 6 minutes
after the rotation (the JWK set's cache lifetime of 5 min, the 30 s reload
and 30 s of clock skew), so that no verifier meets a token whose key it has
not fetched. Until then they are "pending" in 'userd keys list'. The older
keys still verify until every token they signed has expired, then retire.

With --now the keys sign on every node within 30 s instead: for a key that
must stop signing at once (a suspected leak). Verifiers that cache the JWK
set refuse the new tokens until they fetch it again.`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			when := domain.RotateWhenPublished
			if now {
				when = domain.RotateNow
			}
			return r.keys(cmd.Context(), &when)
		},
	}
	cmd.Flags().BoolVar(&now, "now", false, "sign with the new keys at once (within 30 s), not once every cached JWK set has them")
	return cmd
}

func (r *root) keysListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the signing keys: published, active, pending, retired",
		Long: withConfigNote(`List the signing keys, published, active, pending and retired: those of access
tokens (purpose access-token), then those of the OpenID provider
(oidc-signing, RS256).`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return r.keys(cmd.Context(), nil) },
	}
}

// keys runs `userd keys rotate` (rotate says when the keys sign) or, with
// rotate nil, `userd keys list` over the configured store, through the
// application's key use cases.
func (r *root) keys(ctx context.Context, rotate *domain.KeyRotation) error {
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
		if rotate != nil {
			return r.printRotated(ctx, svc.Keys, opts, *rotate)
		}
		return r.printKeys(ctx, cfg, svc.Keys, opts)
	})
}

// keyPurposes name what each purpose's keys sign, for people.
var keyPurposes = map[domain.KeyPurpose]string{
	domain.KeyPurposeAccessToken: "access tokens",
	domain.KeyPurposeOIDC:        "the OpenID provider's ID tokens",
}

func (r *root) printRotated(ctx context.Context, keys *application.KeyService, opts jwtissuer.Options, when domain.KeyRotation) error {
	added, err := keys.RotateAsOperator(ctx, when)
	if errors.Is(err, domain.ErrKeyConfigured) {
		return errors.New("keys rotate: the signing key is USERD_JWT_HMAC_SECRET, not stored; rotate it by changing that setting")
	}
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, key := range added {
		retires := key.ActiveFrom.Add(opts.RetireAfter()).UTC().Format(time.RFC3339)
		fmt.Fprintf(&b, "created %s key %s for %s\n", key.Algorithm, key.KID, keyPurposes[key.Purpose])
		if key.Status == domain.KeyPending {
			fmt.Fprintf(&b, "every node publishes it within %s and signs with it from %s; the older keys retire at %s\n",
				jwtissuer.ReloadInterval, key.ActiveFrom.UTC().Format(time.RFC3339), retires)
		} else {
			fmt.Fprintf(&b, "every node signs with it within %s; the older keys retire at %s\n", jwtissuer.ReloadInterval, retires)
		}
	}
	if opts.HMACSecret != nil {
		b.WriteString("the access-token key is USERD_JWT_HMAC_SECRET, not stored; rotate it by changing that setting\n")
	}
	_, err = io.WriteString(r.stdout, b.String())
	return err
}

func (r *root) printKeys(ctx context.Context, cfg config.Config, keys *application.KeyService, opts jwtissuer.Options) error {
	list, err := keys.ListAsOperator(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(r.stdout, "no signing keys yet: `userd serve` or `userd keys rotate` creates them")
		return err
	}
	var table strings.Builder
	table.WriteString("KID\tPURPOSE\tALGORITHM\tSIGNS FROM\tSTATUS\tRETIRES\n")
	for _, k := range list {
		from, retires := k.ActiveFrom.UTC().Format(time.RFC3339), "-"
		if k.Configured {
			from = "(USERD_JWT_HMAC_SECRET)"
		}
		if !k.RetiresAt.IsZero() {
			retires = k.RetiresAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\t%s\t%s\t%s\n", k.KID, k.Purpose, k.Algorithm, from, k.Status, retires)
	}
	_, err = fmt.Fprintf(r.stdout, "%s\naccess-token keys sign access tokens; oidc-signing keys (RS256) sign the OpenID provider's\n"+
		"ID tokens and rotate with them. active signs; pending is published and signs from its time;\n"+
		"published verifies until it retires %s after the next key starts signing (reload %s +\n"+
		"USERD_ACCESS_TTL %s + leeway %s); ignored, an access-token key not of %s or an oidc-signing\n"+
		"key while USERD_OIDC_PROVIDER is false, is never used.\n",
		columns(table.String(), 2), opts.RetireAfter(), jwtissuer.ReloadInterval, cfg.AccessTTL, jwtissuer.DefaultLeeway, cfg.JWTAlgorithm)
	return err
}
