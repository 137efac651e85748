package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
)

const identityProvidersCreateHelp = `Register an identity provider people may sign in with, by its SLUG
(1 to 32 lower-case letters, digits and hyphens: part of its callback URL,
USERD_PUBLIC_URL/auth/idp/SLUG/callback, which the command prints; register
it at the provider).

--display-name, --kind, --client-id and the client secret are required, and
--issuer for an oidc provider. The client secret is never a flag's value:
pipe it in with --client-secret-stdin, or name an environment variable
holding it with --client-secret-env. It is sealed in the database and never
shown again.

Flags left out take the defaults: scopes openid, email and profile (read:user
and user:email for github), any email domain, accounts created for unknown
people with a verified email, the provider's email_verified trusted,
enabled; a github provider's endpoints are github.com's.

  printf '%s\n' "$ACME_SECRET" | userd identity-providers create acme \
    --display-name "Acme SSO" --kind oidc --issuer https://sso.acme.example \
    --client-id userd --allowed-domain acme.example --client-secret-stdin
  GITHUB_SECRET=… userd identity-providers create github --display-name GitHub \
    --kind github --client-id Iv1.0123456789abcdef --client-secret-env GITHUB_SECRET`

func (r *root) identityProvidersCreateCommand() *cobra.Command {
	var flags providerFlags
	cmd := &cobra.Command{
		Use:   "create SLUG",
		Short: "register an identity provider; its client secret from stdin or the environment",
		Long:  withConfigNote(identityProvidersCreateHelp),
		Args:  slugArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !flags.secretStdin && flags.secretEnv == "" {
				return usageErrorf("the client secret is required: --client-secret-stdin or --client-secret-env NAME")
			}
			in, err := flags.input(cmd, r.stdin)
			if err != nil {
				return err
			}
			slug := args[0]
			in.Slug = &slug
			return r.withIdentityProviders(cmd.Context(), "create",
				func(ctx context.Context, svc *application.IdentityProviderService, callbackURL func(string) string) error {
					p, err := svc.CreateIdentityProviderAsOperator(ctx, in)
					if err != nil {
						return err
					}
					_, err = fmt.Fprintf(r.stdout, "created %s identity provider %q (%s)\ncallback URL  %s\n",
						p.Kind, p.DisplayName, p.Slug, callbackURL(p.Slug))
					return err
				})
		},
	}
	flags.register(cmd.Flags(), true)
	for _, f := range []string{"display-name", "kind", "client-id"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
