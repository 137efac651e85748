package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

func (r *root) clientsRotateSecretCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rotate-secret CLIENT_ID",
		Short: "give a confidential OpenID client a new secret, printed once; the old one stops at once",
		Long: withConfigNote(`Give a confidential client of the OpenID provider a new secret and print it,
once: the old secret stops working at once, on every node. Put the new one
in the client's configuration right away. A public client has no secret.`),
		Args: clientIDArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.withClients(cmd.Context(), "rotate-secret", func(ctx context.Context, svc *application.OAuthClientService) error {
				secret, err := svc.RotateSecretAsOperator(ctx, args[0])
				if err != nil {
					return err
				}
				return r.printSecret(secret)
			})
		},
	}
}
