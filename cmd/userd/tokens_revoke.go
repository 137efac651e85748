package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

func (r *root) tokensRevokeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke USER TOKEN_ID",
		Short: "revoke a user's personal access token; it stops working at once",
		Long: withConfigNote(`Revoke the personal access token TOKEN_ID (see 'userd tokens list') of the
user USER (a user id). It is refused on every node within a second. The
revocation is audited (token.revoked, without an actor) and sent to the
webhooks.`),
		Args: tokenArgs(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.withTokens(cmd.Context(), "revoke", func(ctx context.Context, svc *application.PersonalTokenService) error {
				if err := svc.RevokeAsOperator(ctx, args[0], args[1]); err != nil {
					return err
				}
				_, err := fmt.Fprintf(r.stdout, "revoked token %s of user %s\n", args[1], args[0])
				return err
			})
		},
	}
}
