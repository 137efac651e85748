package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

const clientsCreateHelp = `Register a client of the OpenID provider and print its client_id and, for
a confidential client, its secret: 32 random bytes in base64url, shown
only now (only a hash is stored).

Redirect URIs are matched as exact strings: https, http on a loopback host
(localhost, 127.0.0.1, [::1]; any port matches a loopback redirect), or for
a public client a private-use scheme with a dot (com.example.app:/cb); no
fragment, no wildcard. Repeat --redirect-uri for each.

Flags left out take the defaults: grant types authorization_code and
refresh_token, every scope (openid, profile, email, profiles,
offline_access), not first party, ID tokens signed with RS256.

  userd clients create --name Grafana --type confidential \
    --redirect-uri https://grafana.example.com/login/generic_oauth
  userd clients create --name Billing --type confidential --grant-type client_credentials
  userd clients create --name Desktop --type public \
    --redirect-uri http://127.0.0.1/callback --redirect-uri com.example.app:/callback`

func (r *root) clientsCreateCommand() *cobra.Command {
	var (
		name, typ, alg     string
		redirects, logouts []string
		grants, scopes     []string
		firstParty         bool
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "register an OpenID client; its secret is printed once",
		Long:  withConfigNote(clientsCreateHelp),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := domain.OAuthClientInput{Name: &name, Type: &typ}
			changed := cmd.Flags().Changed
			if changed("redirect-uri") {
				in.RedirectURIs = redirects
			}
			if changed("post-logout-redirect-uri") {
				in.PostLogoutRedirectURIs = logouts
			}
			if changed("grant-type") {
				in.GrantTypes = grants
			}
			if changed("scope") {
				in.Scopes = scopes
			}
			if changed("first-party") {
				in.FirstParty = &firstParty
			}
			if changed("id-token-alg") {
				in.IDTokenSigningAlg = &alg
			}
			return r.withClients(cmd.Context(), "create", func(ctx context.Context, svc *application.OAuthClientService) error {
				return r.createClient(ctx, svc, in)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the client's display `NAME` (required)")
	f.StringVar(&typ, "type", "", "confidential (a server, with a secret) or public (a browser or native app) (required)")
	// Arrays, not slices: a URI may hold a comma.
	f.StringArrayVar(&redirects, "redirect-uri", nil, "a redirect `URI`; repeat for more")
	f.StringArrayVar(&logouts, "post-logout-redirect-uri", nil, "a `URI` a sign-out may return to; repeat for more")
	f.StringSliceVar(&grants, "grant-type", nil, "authorization_code, refresh_token, client_credentials; repeat or separate with commas")
	f.StringSliceVar(&scopes, "scope", nil, "openid, profile, email, profiles, offline_access; repeat or separate with commas")
	f.BoolVar(&firstParty, "first-party", false, "the deployment's own app: no consent page")
	f.StringVar(&alg, "id-token-alg", "RS256", "what signs its ID tokens: RS256 or EdDSA")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("type")
	return cmd
}

func (r *root) createClient(ctx context.Context, svc *application.OAuthClientService, in domain.OAuthClientInput) error {
	created, err := svc.CreateAsOperator(ctx, in)
	if err != nil {
		return err
	}
	c := created.Client
	if _, err := fmt.Fprintf(r.stdout, "created %s client %q\nclient_id      %s\n", c.Type, c.Name, c.ID); err != nil {
		return err
	}
	if created.Secret == "" {
		return nil
	}
	return r.printSecret(created.Secret)
}
