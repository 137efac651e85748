// Command userd is the user-management and authentication service.
//
//	userd [serve]                             run the HTTP server (default)
//	userd admin create --email E --name N     create an admin; password on stdin
//	userd migrate up|status                   apply or list schema migrations
//	userd keys rotate|list                    add a signing key, or list them
//	userd users import FILE                   import users from CSV or JSON lines
//	userd config print                        print the effective configuration
//	userd version                             print version information
//	userd help [COMMAND]                      show help; also COMMAND --help
//
// Exit codes: 0 success, 1 failure, 2 usage error. Messages go to standard
// error, results to standard output.
//
// Configuration comes from USERD_* environment variables and an optional
// YAML file named by USERD_CONFIG; see the README.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// cli is one invocation's standard streams.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// runner runs a command with its positional arguments, its flags parsed.
type runner func(c *cli, args []string) error

// command is one leaf of the command line: "serve", "keys rotate".
type command struct {
	name string
	// args is the synopsis of the positional arguments, e.g. "FILE".
	args    string
	summary string
	// help is the text of `userd NAME --help` after the synopsis.
	help string
	// setup declares the command's flags on fs and returns its runner,
	// which reads them.
	setup func(fs *flag.FlagSet) runner
}

// usageError is a command line that cannot be run as given: exit code 2.
type usageError struct {
	// cmd is the command or group whose usage applies; empty for the
	// top level.
	cmd string
	msg string
}

func (e usageError) Error() string { return e.msg }

func usageErrorf(cmd, format string, args ...any) error {
	return usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// noArgs is the runner of a command without positional arguments.
func noArgs(name string, fn func(c *cli) error) runner {
	return func(c *cli, args []string) error {
		if len(args) > 0 {
			return usageErrorf(name, "%s: unexpected argument %q", name, args[0])
		}
		return fn(c)
	}
}

const configNote = `Configuration: USERD_* environment variables, or a YAML file named by
USERD_CONFIG (see 'userd config print').`

// commands lists every command, in the order of the help. It is set by
// init because the help command's runner reads it.
var commands []command

func init() { commands = commandList() }

func commandList() []command {
	return []command{
		{
			name:    "serve",
			summary: "run the HTTP server (the default command)",
			help: `Serve the API on USERD_HTTP_ADDR until SIGINT or SIGTERM, then stop
gracefully within USERD_SHUTDOWN_TIMEOUT. On a SQL database the schema is
migrated first unless USERD_DB_AUTO_MIGRATE=false.`,
			setup: func(*flag.FlagSet) runner {
				return noArgs("serve", func(*cli) error { return serve() })
			},
		},
		{
			name:    "admin create",
			summary: "create an admin; the password is read from stdin",
			help: `Create a user with ROLE_ADMIN on the configured database. The password is
the first line of standard input, never a flag, where other users and the
shell history could see it:

  printf '%s\n' "$PASSWORD" | userd admin create --email admin@example.com`,
			setup: func(fs *flag.FlagSet) runner {
				email := fs.String("email", "", "email `ADDRESS` of the new admin (required)")
				name := fs.String("name", "Administrator", "the new admin's display `NAME`")
				return noArgs("admin create", func(c *cli) error {
					if *email == "" {
						return usageErrorf("admin create", "admin create: --email is required")
					}
					password, err := readPassword(c.stdin)
					if err != nil {
						return err
					}
					return createAdmin(*name, *email, password, c.stdout)
				})
			},
		},
		{
			name:    "migrate up",
			summary: "apply pending schema migrations",
			help:    `Apply the pending schema migrations, then list them all as 'migrate status' does.`,
			setup: func(*flag.FlagSet) runner {
				return noArgs("migrate up", func(c *cli) error { return migrate("up", c.stdout) })
			},
		},
		{
			name:    "migrate status",
			summary: "list the schema migrations, applied or pending",
			setup: func(*flag.FlagSet) runner {
				return noArgs("migrate status", func(c *cli) error { return migrate("status", c.stdout) })
			},
		},
		{
			name:    "keys rotate",
			summary: "add an access-token signing key; older keys retire later",
			help: `Add a new signing key for USERD_JWT_ALGORITHM. Every node signs with it
within 30 s; the older keys still verify until every token they signed has
expired, then retire.`,
			setup: func(*flag.FlagSet) runner {
				return noArgs("keys rotate", func(c *cli) error { return keys("rotate", c.stdout) })
			},
		},
		{
			name:    "keys list",
			summary: "list the signing keys: active, published, retired",
			setup: func(*flag.FlagSet) runner {
				return noArgs("keys list", func(c *cli) error { return keys("list", c.stdout) })
			},
		},
		{
			name:    "users import",
			args:    "FILE",
			summary: "import users with existing password hashes from CSV or JSON lines",
			help:    importHelp,
			setup:   importSetup,
		},
		{
			name:    "config print",
			summary: "print the effective configuration, secrets masked",
			help: `Print every configuration key by its environment variable, sorted, with
its effective value and where it came from: default, file (USERD_CONFIG)
or env. Secrets (USERD_BOOTSTRAP_ADMIN_PASSWORD, USERD_JWT_HMAC_SECRET, a
password inside USERD_DB_DSN) are masked. An invalid configuration is
reported as 'serve' would report it, with exit code 1.`,
			setup: func(*flag.FlagSet) runner {
				return noArgs("config print", func(c *cli) error { return configPrint(c.stdout, os.Getenv) })
			},
		},
		{
			name:    "version",
			summary: "print version, commit and Go version",
			setup: func(*flag.FlagSet) runner {
				return noArgs("version", func(c *cli) error {
					fmt.Fprintln(c.stdout, versionLine())
					return nil
				})
			},
		},
		{
			name:    "help",
			args:    "[COMMAND]",
			summary: "show this help, or a command's",
			setup: func(*flag.FlagSet) runner {
				return func(c *cli, args []string) error { return helpCommand(c, args) }
			},
		},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func versionLine() string {
	return fmt.Sprintf("userd %s (commit %s, %s %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// run dispatches a command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		return c.exec(findCommand("serve"), nil)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return exitOK
	case "-version", "--version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	}
	if len(args) > 1 {
		if cmd := findCommand(args[0] + " " + args[1]); cmd != nil {
			return c.exec(cmd, args[2:])
		}
	}
	if cmd := findCommand(args[0]); cmd != nil {
		return c.exec(cmd, args[1:])
	}
	if subs := subcommands(args[0]); len(subs) > 0 {
		group := args[0]
		switch {
		case len(args) > 1 && isHelpFlag(args[1]):
			fmt.Fprint(stdout, groupHelp(group))
			return exitOK
		case len(args) == 1:
			return c.fail(groupError(group, ""))
		default:
			return c.fail(groupError(group, args[1]))
		}
	}
	if strings.HasPrefix(args[0], "-") {
		return c.fail(usageErrorf("", "unknown flag %s before the command", args[0]))
	}
	return c.fail(usageErrorf("", "unknown command %q", args[0]))
}

// exec parses the flags of cmd from args and runs it.
func (c *cli) exec(cmd *command, args []string) int {
	fs := flag.NewFlagSet("userd "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := cmd.setup(fs)
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, commandHelp(cmd))
		return exitOK
	}
	if err != nil {
		return c.fail(usageErrorf(cmd.name, "%s: %s", cmd.name, flagErrorText(err)))
	}
	return c.fail(run(c, positional))
}

// flagErrorText rewords the errors of package flag, which name flags with
// one dash, in the two-dash form the help shows.
func flagErrorText(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}

// fail reports err on stderr and returns its exit code: 2 with a usage
// hint for a usage error, 1 for any other, 0 for none.
func (c *cli) fail(err error) int {
	if err == nil {
		return exitOK
	}
	var uerr usageError
	if errors.As(err, &uerr) {
		fmt.Fprintf(c.stderr, "userd: %v\n%s", err, usageHint(uerr.cmd))
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "userd: %v\n", err)
	return exitFailure
}

// parseInterspersed parses flags wherever they appear among the
// positional arguments (flag.Parse alone stops at the first positional
// one), until "--", after which everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func isHelpFlag(s string) bool {
	return s == "-h" || s == "-help" || s == "--help" || s == "help"
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// subcommands returns the commands of a group ("keys": rotate, list).
func subcommands(group string) []*command {
	var out []*command
	for i := range commands {
		if g, _, ok := strings.Cut(commands[i].name, " "); ok && g == group {
			out = append(out, &commands[i])
		}
	}
	return out
}

// groupError is the usage error of a group called without a known
// subcommand: "keys: expected rotate or list".
func groupError(group, got string) error {
	var names []string
	for _, cmd := range subcommands(group) {
		names = append(names, strings.TrimPrefix(cmd.name, group+" "))
	}
	want := "the subcommand " + names[0]
	if len(names) > 1 {
		want = strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	if got == "" {
		return usageErrorf(group, "%s: expected %s", group, want)
	}
	return usageErrorf(group, "%s: unknown subcommand %q: expected %s", group, got, want)
}

func helpCommand(c *cli, args []string) error {
	name := strings.Join(args, " ")
	switch {
	case name == "":
		fmt.Fprint(c.stdout, usage())
	case findCommand(name) != nil:
		fmt.Fprint(c.stdout, commandHelp(findCommand(name)))
	case len(subcommands(name)) > 0:
		fmt.Fprint(c.stdout, groupHelp(name))
	default:
		return usageErrorf("", "help: unknown command %q", name)
	}
	return nil
}

// synopsis is "userd NAME [flags] ARGS" for cmd.
func synopsis(cmd *command) string {
	s := "userd " + cmd.name
	if hasFlags(cmd) {
		s += " [flags]"
	}
	if cmd.args != "" {
		s += " " + cmd.args
	}
	return s
}

func hasFlags(cmd *command) bool {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	cmd.setup(fs)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// usage is the top-level help.
func usage() string {
	var b strings.Builder
	b.WriteString("userd — user management and authentication over HTTP+JSON\n\nUsage:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	for i := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", synopsis(&commands[i]), commands[i].summary)
	}
	_ = tw.Flush()
	b.WriteString(`
Run 'userd COMMAND --help' (or 'userd help COMMAND') for a command's flags.
'userd' alone is 'userd serve'. 'userd --version' is 'userd version'.

Exit codes: 0 success, 1 failure, 2 usage error. Messages go to standard
error, results to standard output.

` + configNote + "\n")
	return b.String()
}

// groupHelp is the help of a group of commands, e.g. "keys".
func groupHelp(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	for _, cmd := range subcommands(group) {
		fmt.Fprintf(tw, "  %s\t%s\n", synopsis(cmd), cmd.summary)
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nRun 'userd %s SUBCOMMAND --help' for a subcommand's flags.\n", group)
	return b.String()
}

// commandHelp is the text of `userd NAME --help`.
func commandHelp(cmd *command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", synopsis(cmd))
	help := cmd.help
	if help == "" {
		help = strings.ToUpper(cmd.summary[:1]) + cmd.summary[1:] + "."
	}
	b.WriteString(help + "\n\nFlags:\n")
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	cmd.setup(fs)
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		value, text := flag.UnquoteUsage(f)
		if value == "value" && isBoolFlag(f) {
			value = ""
		}
		left := "--" + f.Name
		if value != "" {
			left += " " + value
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", left, text)
	})
	fmt.Fprintf(tw, "  -h, --help\tshow this help\n")
	_ = tw.Flush()
	if cmd.name != "version" && cmd.name != "help" {
		b.WriteString("\n" + configNote + "\n")
	}
	return b.String()
}

func isBoolFlag(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// usageHint follows a usage error: the synopsis of the command or group
// concerned and where to find more.
func usageHint(name string) string {
	if cmd := findCommand(name); cmd != nil {
		return fmt.Sprintf("Usage: %s\nRun 'userd %s --help' for more.\n", synopsis(cmd), name)
	}
	if subs := subcommands(name); len(subs) > 0 {
		var lines []string
		for _, cmd := range subs {
			lines = append(lines, synopsis(cmd))
		}
		return "Usage: " + strings.Join(lines, "\n       ") + "\n"
	}
	names := make([]string, 0, len(commands))
	for _, cmd := range commands {
		if g, _, _ := strings.Cut(cmd.name, " "); !slices.Contains(names, g) {
			names = append(names, g)
		}
	}
	return fmt.Sprintf("Commands: %s.\nRun 'userd --help' for usage.\n", strings.Join(names, ", "))
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) (string, error) {
	if r == nil {
		r = strings.NewReader("")
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("admin create: no password on stdin (pipe it in, e.g. `printf %s \"$PW\" | userd admin create ...`)")
	}
	return line, nil
}
