package userdproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles cmd/userd into dir and returns the binary's path. The
// compiler's output goes to stderr, where a failing build explains itself.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "userd")
	build := exec.Command("go", "build", "-o", bin, "github.com/userd/userd/cmd/userd") //nolint:gosec // G204: a fixed go build of this module's cmd/userd; bin is a path in the caller's directory
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build userd: %w", err)
	}
	return bin, nil
}

// RunTests is the TestMain of a suite that starts the binary: it builds
// cmd/userd into a temporary directory named after prefix, stores its
// path in *bin, runs the tests and removes the directory. It returns the
// exit code for os.Exit; a failed build fails the suite.
func RunTests(m *testing.M, prefix string, bin *string) int {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary directory; nothing to keep
	if *bin, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
