package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The `userd clients` commands: the OpenID provider's clients, for the
// operator at the command line. Each command has its file
// (clients_create.go, …); what they share is here.

// withClients runs fn with the client use cases over the configured
// store, as `userd clients <name>`.
func (r *root) withClients(ctx context.Context, name string, fn func(context.Context, *application.OAuthClientService) error) error {
	return r.withServices(ctx, "clients "+name+": USERD_DB_DRIVER=memory keeps nothing; the clients live in the database of the nodes",
		func(ctx context.Context, svc *application.Services) error {
			return clientError(name, fn(ctx, svc.OAuthClients))
		})
}

// clientError says what a refusal of the client use cases means to the
// operator, as `userd clients <name>: …`.
func clientError(name string, err error) error {
	var verr *domain.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &verr):
		return fmt.Errorf("clients %s: %s", name, verr.Error())
	case errors.Is(err, domain.ErrOAuthClientNotFound):
		return fmt.Errorf("clients %s: no client has this id", name)
	case errors.Is(err, domain.ErrPublicOAuthClient):
		return fmt.Errorf("clients %s: the client is public: it has no secret", name)
	}
	return err
}

// clientIDArg is the Args of a command that takes one CLIENT_ID: a
// malformed one is a usage error, before anything is opened.
func clientIDArg(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("expected one CLIENT_ID, got %d arguments", len(args))
	}
	if _, err := domain.ParseOAuthClientID(args[0]); err != nil {
		return usageErrorf("%q is not a client id (24 lowercase hexadecimal characters; see 'userd clients list')", args[0])
	}
	return nil
}

// printSecret prints a client's secret, which is shown this once.
func (r *root) printSecret(secret string) error {
	_, err := fmt.Fprintf(r.stdout, "client_secret  %s\nThe secret is shown only now: keep it. Only its hash is stored; "+
		"'userd clients rotate-secret' makes a new one.\n", secret)
	return err
}
