package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// runCLI runs a command line and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCLI_top_level_help(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}} {
		code, out, errOut := runCLI(t, "", args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: code %d, stderr %q", args, code, errOut)
		}
		for _, cmd := range commands {
			if !strings.Contains(out, "userd "+cmd.name) {
				t.Errorf("%v: the help does not list %q:\n%s", args, cmd.name, out)
			}
		}
		if !strings.Contains(out, "Exit codes: 0 success, 1 failure, 2 usage error") {
			t.Errorf("%v: the help does not explain the exit codes", args)
		}
	}
}

// Every command answers --help on stdout with exit code 0, and refuses an
// unknown flag with exit code 2 and its usage on stderr, before doing
// anything (serve would otherwise start).
func TestCLI_every_command_has_help_and_refuses_unknown_flags(t *testing.T) {
	for _, cmd := range commands {
		t.Run(strings.ReplaceAll(cmd.name, " ", "_"), func(t *testing.T) {
			words := strings.Fields(cmd.name)
			for _, help := range []string{"--help", "-h"} {
				code, out, errOut := runCLI(t, "", append(slices.Clone(words), help)...)
				if code != exitOK || errOut != "" || !strings.HasPrefix(out, "Usage: userd "+cmd.name) {
					t.Fatalf("%s %s: code %d, stdout %q, stderr %q", cmd.name, help, code, out, errOut)
				}
				if !strings.Contains(out, "-h, --help") {
					t.Errorf("%s %s does not list its flags:\n%s", cmd.name, help, out)
				}
			}
			code, out, errOut := runCLI(t, "", "help", cmd.name)
			if code != exitOK || !strings.HasPrefix(out, "Usage: userd "+cmd.name) {
				t.Fatalf("help %s: code %d, stdout %q, stderr %q", cmd.name, code, out, errOut)
			}

			code, out, errOut = runCLI(t, "", append(slices.Clone(words), "--bogus")...)
			if code != exitUsage || out != "" ||
				!strings.Contains(errOut, "userd: "+cmd.name+": unknown flag --bogus") ||
				!strings.Contains(errOut, "Usage: userd "+cmd.name) {
				t.Fatalf("%s --bogus: code %d, stdout %q, stderr %q", cmd.name, code, out, errOut)
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
		{"unknown_command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown_top_level_flag", []string{"--frob"}, "unknown flag --frob"},
		{"group_alone", []string{"keys"}, "keys: expected rotate or list"},
		{"unknown_subcommand", []string{"migrate", "sideways"}, `migrate: unknown subcommand "sideways": expected up or status`},
		{"admin_alone", []string{"admin"}, "admin: expected the subcommand create"},
		{"users_alone", []string{"users"}, "users: expected the subcommand import"},
		{"config_alone", []string{"config"}, "config: expected the subcommand print"},
		{"extra_argument", []string{"version", "now"}, `version: unexpected argument "now"`},
		{"serve_extra_argument", []string{"serve", "8080"}, `serve: unexpected argument "8080"`},
		{"admin_without_email", []string{"admin", "create"}, "--email is required"},
		{"flag_without_value", []string{"admin", "create", "--email"}, "flag --email needs a value"},
		{"import_without_file", []string{"users", "import"}, "expected one FILE, got 0 arguments"},
		{"import_two_files", []string{"users", "import", "a.csv", "b.csv"}, "expected one FILE, got 2 arguments"},
		{"import_bad_format", []string{"users", "import", "--format", "xml", "a.csv"}, `--format "xml": want csv or jsonl`},
		{"import_unknown_extension", []string{"users", "import", "users.txt"}, "pass --format csv or --format jsonl"},
		{"import_stdin_without_format", []string{"users", "import", "-"}, "standard input needs --format"},
		{"import_bad_batch_size", []string{"users", "import", "--batch-size", "0", "a.csv"}, "--batch-size 0: want 1 to 10000"},
		{"help_unknown", []string{"help", "frobnicate"}, `help: unknown command "frobnicate"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "userd: ") || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code %d, stdout %q, stderr %q; want 2 and %q on stderr", code, out, errOut, tc.want)
			}
			if !strings.Contains(errOut, "Usage:") && !strings.Contains(errOut, "userd --help") {
				t.Errorf("no usage hint after the error: %q", errOut)
			}
		})
	}
}

func TestCLI_group_help(t *testing.T) {
	code, out, _ := runCLI(t, "", "keys", "--help")
	if code != exitOK || !strings.Contains(out, "userd keys rotate") || !strings.Contains(out, "userd keys list") {
		t.Fatalf("keys --help: code %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "help", "users")
	if code != exitOK || !strings.Contains(out, "userd users import [flags] FILE") {
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
