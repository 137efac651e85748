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

func (r *root) tokensListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list USER",
		Short: "list a user's live personal access tokens: id, name, prefix, scopes, created, expires, last used",
		Long: withConfigNote(`List the live personal access tokens of the user USER (a user id), newest
first. A token itself is never shown, only its prefix: its first 8
characters after udp_, enough to tell it apart.`),
		Args: tokenArgs(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.withTokens(cmd.Context(), "list", func(ctx context.Context, svc *application.PersonalTokenService) error {
				return r.listTokens(ctx, svc, args[0])
			})
		},
	}
}

// listTokens prints the live tokens of the user id as a table.
func (r *root) listTokens(ctx context.Context, svc *application.PersonalTokenService, id string) error {
	list, err := svc.ListAsOperator(ctx, id)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintln(r.stdout, "no live tokens: a user makes them on the account page or through the API")
		return err
	}
	var table strings.Builder
	table.WriteString("TOKEN ID\tNAME\tPREFIX\tSCOPES\tCREATED\tEXPIRES\tLAST USED\n")
	for _, t := range list {
		last := "never"
		if !t.LastUsedAt.IsZero() {
			last = t.LastUsedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, domain.PersonalTokenPrefix+t.Prefix+"…",
			strings.Join(stringsOf(t.Scopes), ","), t.CreatedAt.UTC().Format(time.RFC3339),
			t.ExpiresAt.UTC().Format(time.RFC3339), last)
	}
	_, err = fmt.Fprint(r.stdout, columns(table.String(), 2))
	return err
}
