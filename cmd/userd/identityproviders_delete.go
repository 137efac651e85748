package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

func (r *root) identityProvidersDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete SLUG",
		Short: "delete an identity provider and the identities linked through it",
		Long: withConfigNote(`Delete an identity provider: its button goes, its sign-ins stop, and the
identities linked through it are deleted with it.`),
		Args: slugArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.withIdentityProviders(cmd.Context(), "delete",
				func(ctx context.Context, svc *application.IdentityProviderService, _ func(string) string) error {
					if err := svc.DeleteIdentityProviderAsOperator(ctx, args[0]); err != nil {
						return err
					}
					_, err := fmt.Fprintf(r.stdout, "deleted identity provider %s\n", args[0])
					return err
				})
		},
	}
}
