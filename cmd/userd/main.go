// Command userd is the user-management and authentication service.
//
//	userd [serve]                             run the HTTP server (default)
//	userd admin create --email E --name N     create an admin; password on stdin
//	userd migrate up|status                   apply or list schema migrations
//	userd keys rotate|list                    add a signing key, or list them
//	userd version                             print version information
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
	"strings"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

const usage = `userd — user management and authentication over HTTP+JSON

Usage:
  userd [serve]                           run the HTTP server (the default)
  userd admin create --email E --name N   create an admin; the password is read from stdin
  userd migrate up                        apply pending schema migrations
  userd migrate status                    list schema migrations
  userd keys rotate                       add a new access-token signing key; older keys retire
                                          once every token they signed has expired
  userd keys list                         list the signing keys: active, published, retired
  userd version                           print version, commit and Go version
  userd help                              show this help

Configuration: USERD_* environment variables, or a YAML file named by USERD_CONFIG.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve()
	case "admin":
		err = adminCommand(args, stdin, stdout)
	case "migrate":
		err = migrateCommand(args, stdout)
	case "keys":
		err = keysCommand(args, stdout)
	case "version", "--version":
		fmt.Fprintf(stdout, "userd %s (commit %s, %s %s/%s)\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "userd: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		var uerr usageError
		if errors.As(err, &uerr) {
			fmt.Fprintf(stderr, "userd: %v\n\n%s", err, usage)
			return 2
		}
		fmt.Fprintf(stderr, "userd: %v\n", err)
		return 1
	}
	return 0
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func adminCommand(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "create" {
		return usageError{"admin: expected the subcommand create"}
	}
	fs := flag.NewFlagSet("admin create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "email of the new admin")
	name := fs.String("name", "Administrator", "display name of the new admin")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{"admin create: " + err.Error()}
	}
	if *email == "" {
		return usageError{"admin create: --email is required"}
	}
	// The password comes from stdin, never from the command line, where
	// other users and shell history could see it.
	password, err := readPassword(stdin)
	if err != nil {
		return err
	}
	return createAdmin(*name, *email, password, stdout)
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) (string, error) {
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

func migrateCommand(args []string, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "up" && args[0] != "status") {
		return usageError{"migrate: expected up or status"}
	}
	return migrate(args[0], stdout)
}

func keysCommand(args []string, stdout io.Writer) error {
	if len(args) != 1 || (args[0] != "rotate" && args[0] != "list") {
		return usageError{"keys: expected rotate or list"}
	}
	return keys(args[0], stdout)
}
