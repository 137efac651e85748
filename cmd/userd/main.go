// Command userd is the user-management and authentication service.
//
//	userd [serve]                             run the HTTP server (default)
//	userd admin create --email E --name N     create an admin; password on stdin
//	userd migrate up|status                   apply or list schema migrations
//	userd keys rotate|list                    add a signing key, or list them
//	userd secrets reencrypt                   re-seal the stored secrets under the first secret key
//	userd users import FILE                   import users from CSV or JSON lines
//	userd clients create|list|delete|rotate-secret
//	                                          manage the OpenID provider's clients
//	userd identity-providers create|list|update|delete
//	                                          manage the providers people sign in with (alias idp)
//	userd config print                        print the effective configuration
//	userd version                             print version information
//	userd completion bash|zsh|fish|powershell print a shell completion script
//	userd help [COMMAND]                      show help; also COMMAND --help
//
// Exit codes: 0 success, 1 failure, 2 usage error. Messages go to standard
// error, results to standard output.
//
// Configuration comes from USERD_* environment variables and an optional
// YAML file named by USERD_CONFIG; see the README.
//
// The command line is spf13/cobra's: root.go builds it, and each command
// lives in a file of its own. wiring.go holds the fx modules and the one
// path by which commands build and run the app; start.go, the steps of
// the start, in the order they run.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
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

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func versionLine() string {
	return fmt.Sprintf("userd %s (commit %s, %s %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// run runs a command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	r := newRoot(stdin, stdout, stderr)
	// A nil slice would make cobra read os.Args.
	r.cmd.SetArgs(append([]string{}, args...))
	cmd, err := r.cmd.ExecuteContextC(context.Background())
	return r.exitCode(cmd, err)
}

// exitCode reports err, if any, on stderr and returns the exit code: 2
// with a usage hint for a command line that was refused, 1 for a command
// that failed.
func (r *root) exitCode(cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var uerr usageError
	if !errors.As(err, &uerr) && r.started {
		// Standard error is where failures are reported; a failure to
		// write there has nowhere left to go, and the exit code still says.
		_, _ = fmt.Fprintf(r.stderr, "userd: %v\n", err)
		return exitFailure
	}
	// Everything cobra refuses before a command starts (an unknown
	// command, flag or argument, a missing required flag) is a usage
	// error, whatever its type.
	if cmd == nil {
		cmd = r.cmd
	}
	prefix := ""
	if cmd.HasParent() {
		prefix = strings.TrimPrefix(cmd.CommandPath(), r.cmd.Name()+" ") + ": "
	}
	_, _ = fmt.Fprintf(r.stderr, "userd: %s%v\n%s", prefix, err, usageHint(cmd)) // as above
	return exitUsage
}

// usageHint follows a usage error: the synopsis of the command concerned,
// or of its subcommands, and where to read more.
func usageHint(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return "Run 'userd --help' for usage.\n"
	}
	var lines []string
	if cmd.HasAvailableSubCommands() {
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				lines = append(lines, sub.UseLine())
			}
		}
	} else {
		lines = append(lines, cmd.UseLine())
	}
	return fmt.Sprintf("Usage: %s\nRun '%s --help' for more.\n", strings.Join(lines, "\n       "), cmd.CommandPath())
}
