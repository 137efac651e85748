package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The `userd identity-providers` commands (alias `idp`): the identity
// providers people sign in with, for the operator at the command line.
// Each command has its file (identityproviders_create.go, …); what they
// share is here.

// withIdentityProviders runs fn with the provider use cases over the
// configured store, as `userd identity-providers <name>`, and the
// callback URL of a slug, as the flows send it (USERD_PUBLIC_URL's).
func (r *root) withIdentityProviders(ctx context.Context, name string,
	fn func(context.Context, *application.IdentityProviderService, func(slug string) string) error) error {
	return r.withServices(ctx, "identity-providers "+name+
		": USERD_DB_DRIVER=memory keeps nothing; the providers live in the database of the nodes",
		func(ctx context.Context, svc *application.Services) error {
			return identityProviderError(name, fn(ctx, svc.IdentityProviders, svc.Federation.CallbackURL))
		})
}

// identityProviderError says what a refusal of the provider use cases
// means to the operator, as `userd identity-providers <name>: …`.
func identityProviderError(name string, err error) error {
	var verr *domain.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &verr):
		return fmt.Errorf("identity-providers %s: %s", name, verr.Error())
	case errors.Is(err, domain.ErrIdentityProviderNotFound):
		return fmt.Errorf("identity-providers %s: no identity provider has this slug", name)
	case errors.Is(err, domain.ErrIdentityProviderSlugTaken):
		return fmt.Errorf("identity-providers %s: an identity provider has this slug already", name)
	}
	return err
}

// slugArg is the Args of a command that takes one SLUG: a malformed one
// is a usage error, before anything is opened.
func slugArg(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageErrorf("expected one SLUG, got %d arguments", len(args))
	}
	if _, msg := domain.ParseIdentityProviderSlug(args[0]); msg != "" {
		return usageErrorf("%q is not a provider's slug: it %s", args[0], msg)
	}
	return nil
}

// providerFlags are the flags of a provider's fields, shared by create
// and update: a field is set only when its flag is given.
type providerFlags struct {
	displayName, kind, issuer, clientID string
	authURL, tokenURL, apiURL           string
	scopes, domains                     []string
	autoCreate, trustEmail, enabled     bool
	// The client secret is never a flag's value, which ps and the
	// shell's history would show: it is read from standard input or
	// from an environment variable the flag names.
	secretStdin bool
	secretEnv   string
}

// register adds the flags to f. A create's booleans show the defaults
// they take when left out; an update's have none to show, since a flag
// left out keeps the provider's value.
func (p *providerFlags) register(f *pflag.FlagSet, create bool) {
	f.StringVar(&p.displayName, "display-name", "", "the `NAME` on its sign-in button")
	f.StringVar(&p.kind, "kind", "", "the `KIND`: oidc (any OpenID provider, by its issuer) or github")
	f.StringVar(&p.issuer, "issuer", "", "an oidc provider's issuer `URL` (https)")
	f.StringVar(&p.clientID, "client-id", "", "userd's client `ID` at the provider")
	f.BoolVar(&p.secretStdin, "client-secret-stdin", false, "read the client secret from the first line of standard input")
	f.StringVar(&p.secretEnv, "client-secret-env", "", "read the client secret from the environment variable `NAME`")
	f.StringSliceVar(&p.scopes, "scope", nil, "a `SCOPE` to ask for; repeat or separate with commas")
	f.StringSliceVar(&p.domains, "allowed-domain", nil, "an email `DOMAIN` that may sign in (all when none); repeat or separate with commas")
	f.BoolVar(&p.autoCreate, "auto-create", create, "give an unknown person with a verified email an account")
	f.BoolVar(&p.trustEmail, "trust-email-verified", create, "take the provider's email_verified (false: its emails are unverified)")
	f.BoolVar(&p.enabled, "enabled", create, "show its button and accept its sign-ins")
	f.StringVar(&p.authURL, "auth-url", "", "a github provider's authorization endpoint `URL` (GitHub Enterprise)")
	f.StringVar(&p.tokenURL, "token-url", "", "a github provider's token endpoint `URL` (GitHub Enterprise)")
	f.StringVar(&p.apiURL, "api-url", "", "a github provider's API `URL` (GitHub Enterprise)")
}

// input returns the fields whose flags were given, and the client secret
// when one was asked for.
func (p *providerFlags) input(cmd *cobra.Command, stdin io.Reader) (domain.IdentityProviderInput, error) {
	changed := cmd.Flags().Changed
	var in domain.IdentityProviderInput
	for _, s := range []struct {
		flag string
		from string
		to   **string
	}{
		{"display-name", p.displayName, &in.DisplayName}, {"kind", p.kind, &in.Kind}, {"issuer", p.issuer, &in.Issuer},
		{"client-id", p.clientID, &in.ClientID}, {"auth-url", p.authURL, &in.AuthURL},
		{"token-url", p.tokenURL, &in.TokenURL}, {"api-url", p.apiURL, &in.APIURL},
	} {
		if changed(s.flag) {
			*s.to = &s.from
		}
	}
	for _, b := range []struct {
		flag string
		from bool
		to   **bool
	}{{"auto-create", p.autoCreate, &in.AutoCreate}, {"trust-email-verified", p.trustEmail, &in.TrustEmailVerified},
		{"enabled", p.enabled, &in.Enabled}} {
		if changed(b.flag) {
			*b.to = &b.from
		}
	}
	// --allowed-domain "" clears the list: every domain may sign in.
	if changed("scope") {
		in.Scopes = nonEmpty(p.scopes)
	}
	if changed("allowed-domain") {
		in.AllowedDomains = nonEmpty(p.domains)
	}
	secret, err := p.secret(stdin)
	if err != nil {
		return domain.IdentityProviderInput{}, err
	}
	in.ClientSecret = secret
	return in, nil
}

// secret reads the client secret where the flags say, or returns nil
// when they ask for none.
func (p *providerFlags) secret(stdin io.Reader) (*string, error) {
	switch {
	case p.secretStdin && p.secretEnv != "":
		return nil, usageErrorf("give the client secret by --client-secret-stdin or --client-secret-env, not both")
	case p.secretStdin:
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read the client secret: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			return nil, errors.New("no client secret on standard input (pipe it in, e.g. `printf '%s\\n' \"$SECRET\" | userd identity-providers …`)")
		}
		return &line, nil
	case p.secretEnv != "":
		v, ok := os.LookupEnv(p.secretEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("the environment variable %s (--client-secret-env) is not set or empty", p.secretEnv)
		}
		return &v, nil
	}
	return nil, nil
}

// nonEmpty returns list without its empty entries, never nil: a flag
// given only as "" is an empty list.
func nonEmpty(list []string) []string {
	out := []string{}
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
