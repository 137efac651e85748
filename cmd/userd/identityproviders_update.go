package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

func (r *root) identityProvidersUpdateCommand() *cobra.Command {
	var flags providerFlags
	cmd := &cobra.Command{
		Use:   "update SLUG",
		Short: "change an identity provider: the fields of the flags given, the rest kept",
		Long: withConfigNote(`Change an identity provider: the fields whose flags are given are replaced
(a list whole), the others kept, the client secret too unless
--client-secret-stdin or --client-secret-env gives a new one. The slug and
the kind cannot change. A change applies to the next sign-in.

  userd identity-providers update acme --enabled=false
  printf '%s\n' "$NEW_SECRET" | userd identity-providers update acme --client-secret-stdin
  userd identity-providers update acme --allowed-domain ""    # every domain`),
		Args: slugArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := flags.input(cmd, r.stdin)
			if err != nil {
				return err
			}
			return r.withIdentityProviders(cmd.Context(), "update",
				func(ctx context.Context, svc *application.IdentityProviderService, _ func(string) string) error {
					p, err := svc.UpdateIdentityProviderAsOperator(ctx, args[0], in)
					if err != nil {
						return err
					}
					state := "enabled"
					if !p.Enabled {
						state = "disabled"
					}
					_, err = fmt.Fprintf(r.stdout, "updated identity provider %s (%s; scopes %s)\n", p.Slug, state,
						strings.Join(p.Scopes, ","))
					return err
				})
		},
	}
	flags.register(cmd.Flags(), false)
	return cmd
}
