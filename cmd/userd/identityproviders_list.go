package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func (r *root) identityProvidersListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the identity providers: slug, kind, name, state, issuer or API, allowed domains",
		Long:  withConfigNote(`List every identity provider, by slug. Client secrets are never shown.`),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.withIdentityProviders(cmd.Context(), "list",
				func(ctx context.Context, svc *application.IdentityProviderService, _ func(string) string) error {
					return r.listIdentityProviders(ctx, svc)
				})
		},
	}
}

// listIdentityProviders prints every provider as a table.
func (r *root) listIdentityProviders(ctx context.Context, svc *application.IdentityProviderService) error {
	list, err := svc.IdentityProvidersAsOperator(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(r.stdout, "no identity providers yet: 'userd identity-providers create' registers one")
		return err
	}
	var table strings.Builder
	table.WriteString("SLUG\tKIND\tNAME\tENABLED\tISSUER OR API\tCLIENT ID\tALLOWED DOMAINS\tCREATED\n")
	for _, p := range list {
		where := p.Issuer
		if p.Kind == domain.IdentityProviderGitHub {
			where = p.APIURL
		}
		domains := strings.Join(p.AllowedDomains, ",")
		if domains == "" {
			domains = "any"
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\n", p.Slug, p.Kind, p.DisplayName, p.Enabled, where, p.ClientID,
			domains, p.CreatedAt.UTC().Format(time.RFC3339))
	}
	_, err = fmt.Fprint(r.stdout, columns(table.String(), 2))
	return err
}
