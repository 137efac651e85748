package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

func (r *root) clientsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete CLIENT_ID",
		Short: "delete an OpenID client; what it was given ends at once",
		Long: withConfigNote(`Delete a client of the OpenID provider. The grants users made it, its codes
and its tokens end with it, on every node within a second.`),
		Args: clientIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.withClients(cmd.Context(), "delete", func(ctx context.Context, svc *application.OAuthClientService) error {
				if err := svc.DeleteAsOperator(ctx, args[0]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(r.stdout, "deleted client %s\n", args[0])
				return err
			})
		},
	}
}
