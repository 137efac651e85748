package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// redoclyVersion is the pinned @redocly/cli that lints openapi.yaml.
// Upgrade it on purpose: a new release may add rules to "recommended".
const redoclyVersion = "2.77.0"

// TestOpenAPI_redocly_lint runs `redocly lint` with its recommended rules,
// unmodified, on openapi.yaml and fails on any error or warning. The CLI is
// installed from npm, once, into the user's cache directory (nothing is
// written into the repository); later runs reuse it. Skipped when npm is
// missing and the cache holds no install, except in CI (CI=true), where
// that fails.
func TestOpenAPI_redocly_lint(t *testing.T) {
	t.Parallel()
	redocly := redoclyCLI(t)

	// A configuration of our own, outside the repository, so that no
	// redocly.yaml or ignore file found on the way can change the rules.
	cfg := filepath.Join(t.TempDir(), "redocly.yaml")
	if err := os.WriteFile(cfg, []byte("extends:\n  - recommended\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, redocly, "lint", "--config", cfg, "--format", "json", "--max-problems", "1000", doc) //nolint:gosec // G204: the pinned @redocly/cli this test installed, on openapi.yaml
	cmd.Env = redoclyEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run() // exits 1 on errors; the JSON report says what

	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		}
		Version  string
		Problems []struct {
			RuleID   string
			Severity string
			Message  string
			Location []struct {
				Pointer string
				Start   struct{ Line int }
			}
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("redocly lint: %v (%v)\nstdout: %.2000s\nstderr: %.2000s", runErr, err, stdout.String(), stderr.String())
	}
	if report.Version != redoclyVersion {
		t.Errorf("redocly lint reports version %q, want %s", report.Version, redoclyVersion)
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = fmt.Sprintf("%d (%s)", p.Location[0].Start.Line, p.Location[0].Pointer)
		}
		t.Errorf("openapi.yaml:%s: %s %s: %s", where, p.Severity, p.RuleID, p.Message)
	}
	if tot := report.Totals; tot.Errors != 0 || tot.Warnings != 0 || tot.Ignored != 0 {
		t.Errorf("redocly lint %s (recommended): %d errors, %d warnings, %d ignored; want none",
			redoclyVersion, tot.Errors, tot.Warnings, tot.Ignored)
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("redocly lint: %v\nstderr: %.2000s", runErr, stderr.String())
	}
}

// redoclyEnv is the environment of the CLI: no usage data sent, no
// update notice.
func redoclyEnv() []string {
	return append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
}

// redoclyCLI returns the path of the pinned redocly executable, installing
// it from npm when the cache does not hold it yet.
func redoclyCLI(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	home := filepath.Join(cache, "userd", "redocly-cli-"+redoclyVersion)
	bin := filepath.Join(home, "node_modules", ".bin", "redocly")
	if redoclyRuns(bin) == nil {
		return bin
	}

	npm := kit.Tool(t, "npm", "npm", "openapi.yaml is not linted with @redocly/cli")
	// Install into a fresh directory beside home, then move it into place:
	// a concurrent run (another checkout) never sees half an install.
	if err := os.MkdirAll(filepath.Dir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(home), ".redocly-install-")
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is left once tmp is renamed into place; after a failed
	// install, or when another run's install won, removal is best effort.
	defer func() { _ = os.RemoveAll(tmp) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Logf("installing @redocly/cli@%s from npm into %s", redoclyVersion, home)
	cmd := exec.CommandContext(ctx, npm, "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", //nolint:gosec // G204: the npm found on PATH installs the pinned @redocly/cli into the test's cache
		"--prefix", tmp, "@redocly/cli@"+redoclyVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @redocly/cli@%s: %v\n%s", redoclyVersion, err, out)
	}
	if err := os.Rename(tmp, home); err != nil && redoclyRuns(bin) != nil {
		// Not another run's complete install: a broken one, replace it.
		_ = os.RemoveAll(home)
		if err := os.Rename(tmp, home); err != nil {
			t.Fatalf("installing @redocly/cli into %s: %v", home, err)
		}
	}
	if err := redoclyRuns(bin); err != nil {
		t.Fatalf("@redocly/cli@%s (it needs Node.js 20.19+ or 22.12+): %v", redoclyVersion, err)
	}
	return bin
}

// redoclyRuns returns nil when bin runs and is the pinned version.
func redoclyRuns(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = redoclyEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s --version: %w\n%.2000s", bin, err, stderr.String())
	}
	if v := strings.TrimSpace(string(out)); v != redoclyVersion {
		return fmt.Errorf("%s is version %q, want %s", bin, v, redoclyVersion)
	}
	return nil
}
