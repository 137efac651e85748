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

func (r *root) clientsListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the OpenID clients: id, type, name, grant types, redirect URIs",
		Long:  withConfigNote(`List every client of the OpenID provider, by id. Secrets are never shown.`),
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.withClients(cmd.Context(), "list", r.listClients)
		},
	}
}

// listClients prints every client as a table, reading the list a page at
// a time.
func (r *root) listClients(ctx context.Context, svc *application.OAuthClientService) error {
	var table strings.Builder
	table.WriteString("CLIENT ID\tTYPE\tNAME\tGRANT TYPES\tFIRST PARTY\tREDIRECT URIS\tCREATED\n")
	n := 0
	page := domain.Page[domain.OAuthClientID]{Limit: domain.MaxPageLimit}
	for {
		got, err := svc.ListAsOperator(ctx, page)
		if err != nil {
			return err
		}
		for _, c := range got.Items {
			n++
			redirects := strings.Join(c.RedirectURIs, " ")
			if redirects == "" {
				redirects = "-"
			}
			fmt.Fprintf(&table, "%s\t%s\t%s\t%s\t%v\t%s\t%s\n", c.ID, c.Type, c.Name, strings.Join(stringsOf(c.GrantTypes), ","),
				c.FirstParty, redirects, c.CreatedAt.UTC().Format(time.RFC3339))
		}
		if got.Next == "" {
			break
		}
		page.After = got.Next
	}
	if n == 0 {
		_, err := fmt.Fprintln(r.stdout, "no clients yet: 'userd clients create' registers one")
		return err
	}
	_, err := fmt.Fprint(r.stdout, columns(table.String(), 2))
	return err
}

// stringsOf returns list as strings.
func stringsOf[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}
