package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// root is one invocation of the command line: its streams, and the cobra
// command tree built for it.
type root struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	cmd            *cobra.Command
	// started is set once cobra has accepted the command line and the
	// command runs: an error before is a usage error, after a failure.
	started bool
}

const configNote = `Configuration: USERD_* environment variables, or a YAML file named by
USERD_CONFIG (see 'userd config print').`

// withConfigNote is the long help of a command that reads the configuration.
func withConfigNote(help string) string { return help + "\n\n" + configNote }

func init() {
	// The help lists the commands in the order they are added: serve first.
	cobra.EnableCommandSorting = false
	// The root's PersistentPreRunE runs even if a command gets one of its own.
	cobra.EnableTraverseRunHooks = true
}

// newRoot builds the command tree: `userd` alone serves, and every
// command is added here from its own file.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *root {
	r := &root{stdin: stdin, stdout: stdout, stderr: stderr}
	serve := r.serveCommand()
	r.cmd = &cobra.Command{
		Use:     "userd",
		Short:   "user management and authentication over HTTP+JSON",
		Long:    "userd — user management and authentication over HTTP+JSON",
		Version: versionLine(),
		Args:    rootArgs,
		RunE:    serve.RunE,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// cobra checks required flags after this hook and returns a
			// plain error; checked here, a missing one is a usage error.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return usageError{err}
			}
			r.started = true
			return nil
		},
		SilenceErrors: true, // exitCode reports them, once
		SilenceUsage:  true,
	}
	r.cmd.SetIn(stdin)
	r.cmd.SetOut(stdout)
	r.cmd.SetErr(stderr)
	r.cmd.SetVersionTemplate("{{.Version}}\n")
	r.cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	r.cmd.AddCommand(
		serve,
		group("admin", "manage administrators", r.adminCreateCommand()),
		group("migrate", "apply or list schema migrations", r.migrateUpCommand(), r.migrateStatusCommand()),
		group("keys", "manage the access-token signing keys", r.keysRotateCommand(), r.keysListCommand()),
		group("secrets", "manage the encryption of the secrets kept in the database", r.secretsReencryptCommand()),
		group("webhooks", "check the webhook receiver", r.webhooksTestCommand()),
		group("users", "manage users in bulk", r.usersImportCommand(), r.usersExportCommand()),
		group("clients", "manage the OpenID provider's clients", r.clientsCreateCommand(), r.clientsListCommand(),
			r.clientsDeleteCommand(), r.clientsRotateSecretCommand()),
		identityProviders(group("identity-providers", "manage the identity providers people sign in with",
			r.identityProvidersCreateCommand(), r.identityProvidersListCommand(), r.identityProvidersUpdateCommand(),
			r.identityProvidersDeleteCommand())),
		group("tokens", "list and revoke the users' personal access tokens", r.tokensListCommand(), r.tokensRevokeCommand()),
		group("config", "show the configuration", r.configPrintCommand()),
		r.purgeCommand(),
		r.versionCommand(),
	)
	// cobra adds its completion command at Execute; added now, it can be
	// made to refuse an unknown shell like the other groups.
	r.cmd.InitDefaultCompletionCmd()
	for _, c := range r.cmd.Commands() {
		if c.Name() == "completion" {
			c.Args, c.RunE = cobra.ArbitraryArgs, requireSubcommand
		}
	}
	r.cmd.SetHelpCommand(r.helpCommand())
	// The root's help is ours; every other command keeps cobra's.
	defaultHelp := r.cmd.HelpFunc()
	r.cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c.HasParent() {
			defaultHelp(c, args)
			return
		}
		r.rootHelp(c)
	})
	return r
}

// usageError is a command line that cannot be run as given: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// rootArgs refuses the arguments of `userd` alone, which serves: the
// first one is a command cobra did not find.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usageErrorf("unknown command %q%s", args[0], suggestions(cmd, args[0]))
}

func suggestions(cmd *cobra.Command, arg string) string {
	s := cmd.SuggestionsFor(arg)
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(s, " or ") + "?"
}

// noArgs refuses positional arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q", args[0])
	}
	return nil
}

// group is a command that only holds subcommands.
func group(name, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: name, Short: short, RunE: requireSubcommand}
	cmd.AddCommand(subs...)
	return cmd
}

// identityProviders gives the identity-providers group its short alias.
func identityProviders(cmd *cobra.Command) *cobra.Command {
	cmd.Aliases = []string{"idp"}
	return cmd
}

// requireSubcommand runs a group called without one of its subcommands:
// "keys: expected rotate or list". cobra would print the group's help and
// exit 0.
func requireSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	want := "the subcommand " + names[0]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	if len(args) == 0 {
		return usageErrorf("expected %s", want)
	}
	return usageErrorf("unknown subcommand %q: expected %s%s", args[0], want, suggestions(cmd, args[0]))
}

// helpCommand is `userd help [COMMAND]`, cobra's with one change: an
// unknown command is a usage error, not a help page and exit code 0.
func (r *root) helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "show this help, or a command's",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usageErrorf("unknown command %q", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// rootHelp is `userd --help`: every command with its synopsis, where
// cobra's would list only the first word of each.
func (r *root) rootHelp(c *cobra.Command) {
	var b strings.Builder
	b.WriteString(c.Long + "\n\nUsage:\n  userd [COMMAND] [flags]\n\nCommands:\n")
	var table strings.Builder
	var list func(*cobra.Command)
	list = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			switch {
			case !sub.IsAvailableCommand() && sub.Name() != "help":
			case sub.Name() == "completion": // cobra's: one line for its shells
				var shells []string
				for _, sh := range sub.Commands() {
					shells = append(shells, sh.Name())
				}
				fmt.Fprintf(&table, "  %s %s\t%s\n", sub.CommandPath(), strings.Join(shells, "|"), "print a shell completion script")
			case sub.HasAvailableSubCommands():
				list(sub)
			default:
				fmt.Fprintf(&table, "  %s\t%s\n", sub.UseLine(), sub.Short)
			}
		}
	}
	list(c)
	b.WriteString(columns(table.String(), 3))
	fmt.Fprintf(&b, "\nFlags:\n%s", c.LocalFlags().FlagUsages())
	b.WriteString(`
Run 'userd COMMAND --help' (or 'userd help COMMAND') for a command's flags.
'userd' alone is 'userd serve'. 'userd --version' is 'userd version'.

Exit codes: 0 success, 1 failure, 2 usage error. Messages go to standard
error, results to standard output.

` + configNote + "\n")
	// cobra's help functions return nothing: a help text that cannot be
	// written has nobody to be reported to.
	_, _ = io.WriteString(c.OutOrStdout(), b.String())
}
