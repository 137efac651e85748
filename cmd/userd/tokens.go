package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The `userd tokens` commands: the users' personal access tokens, for the
// operator at the command line, who lists and revokes them (only a user
// makes their own, on the account page or through the API). A user is
// named by id, as the console's user page and the API show it. Each
// command has its file (tokens_list.go, …); what they share is here.

// withTokens runs fn with the token use cases over the configured store,
// as `userd tokens <name>`.
func (r *root) withTokens(ctx context.Context, name string, fn func(context.Context, *application.PersonalTokenService) error) error {
	return r.withServices(ctx, "tokens "+name+": USERD_DB_DRIVER=memory keeps nothing; the tokens live in the database of the nodes",
		func(ctx context.Context, svc *application.Services) error {
			return tokenError(name, fn(ctx, svc.Tokens))
		})
}

// tokenError says what a refusal of the token use cases means to the
// operator, as `userd tokens <name>: …`.
func tokenError(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, domain.ErrUserNotFound):
		return fmt.Errorf("tokens %s: no user has this id", name)
	case errors.Is(err, domain.ErrPersonalTokenNotFound):
		return fmt.Errorf("tokens %s: the user has no live token of this id (revoked, expired, or another's; see 'userd tokens list')", name)
	}
	return err
}

// tokenArgs is the Args of a command that takes a USER id and then, with
// tokenID, a TOKEN_ID: a malformed one is a usage error, before anything
// is opened.
func tokenArgs(tokenID bool) cobra.PositionalArgs {
	want, names := 1, "USER"
	if tokenID {
		want, names = 2, "USER and TOKEN_ID"
	}
	return func(_ *cobra.Command, args []string) error {
		if len(args) != want {
			return usageErrorf("expected %s, got %d arguments", names, len(args))
		}
		if _, err := domain.ParseUserID(args[0]); err != nil {
			return usageErrorf("%q is not a user id (24 lowercase hexadecimal characters, as the console's user page shows)", args[0])
		}
		if tokenID {
			if _, ok := domain.ParsePersonalTokenID(args[1]); !ok {
				return usageErrorf("%q is not a token id (32 lowercase hexadecimal characters; see 'userd tokens list')", args[1])
			}
		}
		return nil
	}
}
