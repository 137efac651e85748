package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runCLI runs a command line and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// leafCommands returns the path of every command that runs ("keys
// list", "completion bash"), without "userd".
func leafCommands(t *testing.T) []string {
	t.Helper()
	r := newRoot(nil, io.Discard, io.Discard)
	r.cmd.InitDefaultHelpCmd()
	var paths []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			switch {
			case sub.Hidden:
			case sub.HasSubCommands():
				walk(sub)
			default:
				paths = append(paths, strings.TrimPrefix(sub.CommandPath(), "userd "))
			}
		}
	}
	walk(r.cmd)
	if len(paths) < 10 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	return paths
}

func TestCLI_top_level_help(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: code %d, stderr %q", args, code, errOut)
		}
		for _, name := range leafCommands(t) {
			if shell, ok := strings.CutPrefix(name, "completion "); ok {
				// One line for every shell: userd completion bash|zsh|fish|powershell.
				if !regexp.MustCompile(`userd completion \S*\b` + shell + `\b`).MatchString(out) {
					t.Errorf("%v: the help does not list %q:\n%s", args, name, out)
				}
				continue
			}
			if !strings.Contains(out, "userd "+name) {
				t.Errorf("%v: the help does not list %q:\n%s", args, name, out)
			}
		}
		for _, note := range []string{"Exit codes: 0 success, 1 failure, 2 usage error", "Configuration: USERD_*", "'userd' alone is 'userd serve'"} {
			if !strings.Contains(out, note) {
				t.Errorf("%v: the help lacks %q", args, note)
			}
		}
	}
}

// Every command answers --help on stdout with exit code 0, and refuses an
// unknown flag with exit code 2 and its usage on stderr, before doing
// anything (serve would otherwise start).
func TestCLI_every_command_has_help_and_refuses_unknown_flags(t *testing.T) {
	for _, name := range leafCommands(t) {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			words := strings.Fields(name)
			for _, help := range []string{"--help", "-h"} {
				code, out, errOut := runCLI(t, "", append(slices.Clone(words), help)...)
				if code != exitOK || errOut != "" || !strings.Contains(out, "Usage:\n  userd "+name) {
					t.Fatalf("%s %s: code %d, stdout %q, stderr %q", name, help, code, out, errOut)
				}
				if !strings.Contains(out, "-h, --help") {
					t.Errorf("%s %s does not list its flags:\n%s", name, help, out)
				}
			}
			code, out, errOut := runCLI(t, "", append([]string{"help"}, words...)...)
			if code != exitOK || !strings.Contains(out, "Usage:\n  userd "+name) {
				t.Fatalf("help %s: code %d, stdout %q, stderr %q", name, code, out, errOut)
			}

			code, out, errOut = runCLI(t, "", append(slices.Clone(words), "--bogus")...)
			if code != exitUsage || out != "" ||
				!strings.HasPrefix(errOut, "userd: "+name+": unknown flag: --bogus\n") ||
				!strings.Contains(errOut, "Usage: userd "+name) {
				t.Fatalf("%s --bogus: code %d, stdout %q, stderr %q", name, code, out, errOut)
			}
		})
	}
}

func TestCLI_usage_errors(t *testing.T) {
	t.Setenv("USERD_DB_DSN", filepath.Join(t.TempDir(), "userd.db"))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown_command", []string{"frobnicate"}, `userd: unknown command "frobnicate"`},
		{"misspelt_command", []string{"serv"}, `unknown command "serv"; did you mean serve?`},
		{"unknown_top_level_flag", []string{"--frob"}, "userd: unknown flag: --frob"},
		{"group_alone", []string{"keys"}, "userd: keys: expected rotate or list"},
		{"unknown_subcommand", []string{"migrate", "sideways"}, `userd: migrate: unknown subcommand "sideways": expected up or status`},
		{"admin_alone", []string{"admin"}, "userd: admin: expected the subcommand create"},
		{"users_alone", []string{"users"}, "userd: users: expected import or export"},
		{"config_alone", []string{"config"}, "userd: config: expected the subcommand print"},
		{"completion_alone", []string{"completion"}, "userd: completion: expected bash, zsh, fish or powershell"},
		{"completion_unknown_shell", []string{"completion", "tcsh"}, `unknown subcommand "tcsh"`},
		{"extra_argument", []string{"version", "now"}, `userd: version: unexpected argument "now"`},
		{"serve_extra_argument", []string{"serve", "8080"}, `userd: serve: unexpected argument "8080"`},
		{"admin_without_email", []string{"admin", "create"}, `userd: admin create: required flag(s) "email" not set`},
		{"flag_without_value", []string{"admin", "create", "--email"}, "flag needs an argument: --email"},
		// The password is read from stdin, never taken from a flag.
		{"password_flag", []string{"admin", "create", "--email", "a@example.com", "--password", "secret"}, "unknown flag: --password"},
		{"import_without_file", []string{"users", "import"}, "userd: users import: expected one FILE, got 0 arguments"},
		{"import_two_files", []string{"users", "import", "a.csv", "b.csv"}, "expected one FILE, got 2 arguments"},
		{"import_bad_format", []string{"users", "import", "--format", "xml", "a.csv"}, `--format "xml": want csv or jsonl`},
		{"import_unknown_extension", []string{"users", "import", "users.txt"}, "pass --format csv or --format jsonl"},
		{"import_stdin_without_format", []string{"users", "import", "-"}, "standard input needs --format"},
		{"import_bad_batch_size", []string{"users", "import", "--batch-size", "0", "a.csv"}, "--batch-size 0: want 1 to 10000"},
		{"import_batch_size_not_a_number", []string{"users", "import", "--batch-size", "many", "a.csv"}, `invalid argument "many" for "--batch-size"`},
		{"help_unknown", []string{"help", "frobnicate"}, `userd: help: unknown command "frobnicate"`},
		{"help_unknown_subcommand", []string{"help", "keys", "delete"}, `userd: help: unknown command "keys delete"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "secret\n", tc.args...)
			if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "userd: ") || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errOut, tc.want)
			}
			if strings.Count(errOut, "userd: ") != 1 {
				t.Errorf("the error is not reported once: %q", errOut)
			}
			if !strings.Contains(errOut, "Usage:") && !strings.Contains(errOut, "userd --help") {
				t.Errorf("no usage hint after the error: %q", errOut)
			}
		})
	}
}

func TestCLI_group_help(t *testing.T) {
	code, out, _ := runCLI(t, "", "keys", "--help")
	if code != exitOK || !strings.Contains(out, "userd keys [command]") || !strings.Contains(out, "rotate") || !strings.Contains(out, "list") {
		t.Fatalf("keys --help: code %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "help", "users")
	if code != exitOK || !strings.Contains(out, "userd users [command]") || !strings.Contains(out, "import") {
		t.Fatalf("help users: code %d:\n%s", code, out)
	}
}

// Flags may follow the positional argument: `users import FILE --format csv`.
func TestCLI_flags_after_arguments(t *testing.T) {
	code, _, errOut := runCLI(t, "", "users", "import", "users.txt", "--format", "xml")
	if code != exitUsage || !strings.Contains(errOut, `--format "xml"`) {
		t.Fatalf("code %d, stderr %q: the flag after FILE was not parsed", code, errOut)
	}
	// After "--" everything is an argument, even what looks like a flag.
	code, _, errOut = runCLI(t, "", "users", "import", "--", "--format")
	if code != exitUsage || !strings.Contains(errOut, "cannot tell the format of --format") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestCLI_version(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(t, "", args...)
		want := "userd dev (commit unknown, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
		if code != exitOK || out != want || errOut != "" {
			t.Fatalf("%v: code %d, stdout %q, stderr %q; want %q", args, code, out, errOut, want)
		}
	}
}

// `userd completion SHELL` prints cobra's completion script for the shell,
// and the script's helper command completes userd's own commands.
func TestCLI_completion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash":       "# bash completion V2 for userd",
		"zsh":        "#compdef userd",
		"fish":       "# fish completion for userd",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := runCLI(t, "", "completion", shell)
		if code != exitOK || errOut != "" || !strings.Contains(out, want) {
			t.Errorf("completion %s: code %d, stderr %q, %d bytes without %q", shell, code, errOut, len(out), want)
		}
	}
	code, out, _ := runCLI(t, "", "__complete", "keys", "")
	if code != exitOK || !strings.Contains(out, "rotate\t") || !strings.Contains(out, "list\t") {
		t.Fatalf("__complete keys: code %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "__complete", "admin", "create", "--")
	if code != exitOK || !strings.Contains(out, "--email\t") || strings.Contains(out, "--password") {
		t.Fatalf("__complete admin create --: code %d:\n%s", code, out)
	}
}

// configRows parses `userd config print` into VARIABLE -> [value, source].
func configRows(t *testing.T, out string) (map[string][2]string, []string) {
	t.Helper()
	rows := map[string][2]string{}
	var order []string
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "# USERD_CONFIG") || !strings.HasPrefix(lines[1], "VARIABLE") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	valueCol := strings.Index(lines[1], "VALUE")
	sourceCol := strings.Index(lines[1], "SOURCE")
	for _, line := range lines[2:] {
		if len(line) < sourceCol {
			t.Fatalf("row %q is not aligned with the header", line)
		}
		name := strings.TrimSpace(line[:valueCol])
		rows[name] = [2]string{strings.TrimSpace(line[valueCol:sourceCol]), strings.TrimSpace(line[sourceCol:])}
		order = append(order, name)
	}
	return rows, order
}

func TestCLI_config_print(t *testing.T) {
	const (
		password = "bootstrap-password-do-not-print"
		secret   = "hmac-secret-of-more-than-32-bytes-do-not-print"
		dbSecret = "db-password-do-not-print"
	)
	file := filepath.Join(t.TempDir(), "userd.yaml")
	if err := os.WriteFile(file, []byte("http_addr: \":9090\"\nissuer: from-file\naudience: ~\nlog_level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("USERD_CONFIG", file)
	t.Setenv("USERD_LOG_LEVEL", "warn") // the environment wins over the file
	t.Setenv("USERD_BOOTSTRAP_ADMIN_EMAIL", "root@example.com")
	t.Setenv("USERD_BOOTSTRAP_ADMIN_PASSWORD", password)
	t.Setenv("USERD_JWT_ALGORITHM", "HS256")
	t.Setenv("USERD_JWT_HMAC_SECRET", secret)
	t.Setenv("USERD_DB_DRIVER", "postgres")
	t.Setenv("USERD_DB_DSN", "postgres://userd:"+dbSecret+"@db.internal:5432/userd")

	code, out, errOut := runCLI(t, "", "config", "print")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, s := range []string{password, secret, dbSecret} {
		if strings.Contains(out, s) {
			t.Fatalf("config print shows a secret:\n%s", out)
		}
	}
	rows, order := configRows(t, out)
	if !slices.IsSorted(order) {
		t.Errorf("variables not sorted: %v", order)
	}
	want := map[string][2]string{
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": {"********", "env"},
		"USERD_JWT_HMAC_SECRET":          {"********", "env"},
		"USERD_DB_DSN":                   {"postgres://userd:********@db.internal:5432/userd", "env"},
		"USERD_HTTP_ADDR":                {":9090", "file"},
		"USERD_ISSUER":                   {"from-file", "file"},
		"USERD_AUDIENCE":                 {"userd", "default"}, // null in the file
		"USERD_LOG_LEVEL":                {"warn", "env"},
		"USERD_ACCESS_TTL":               {"15m0s", "default"},
		"USERD_TRUSTED_PROXIES":          {"(unset)", "default"},
	}
	for name, w := range want {
		if got, ok := rows[name]; !ok || got != w {
			t.Errorf("%s = %q, want %q", name, got, w)
		}
	}
	if len(rows) != len(testConfig(t, nil).Redacted()) {
		t.Errorf("%d rows, want one per key (%d)", len(rows), len(testConfig(t, nil).Redacted()))
	}
	if !strings.Contains(out, "# USERD_CONFIG="+file) {
		t.Errorf("the file is not named:\n%s", out)
	}
}

// An invalid configuration fails as serve would, naming the key only.
func TestCLI_config_print_invalid(t *testing.T) {
	const secret = "short-secret-do-not-print"
	t.Setenv("USERD_JWT_ALGORITHM", "HS256")
	t.Setenv("USERD_JWT_HMAC_SECRET", secret)
	code, out, errOut := runCLI(t, "", "config", "print")
	if code != exitFailure || out != "" || !strings.Contains(errOut, "USERD_JWT_HMAC_SECRET: must be at least 32 bytes") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(errOut, secret) {
		t.Fatal("the error shows the secret")
	}
}
