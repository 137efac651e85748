package kit

import (
	"os"
	"os/exec"
	"testing"
)

// Missing ends t for want of something it needs (a program, a service, a
// file), saying what: it skips t, or fails it when CI=true, where .ci/run
// provides everything and every test must run.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required in CI (.ci/run provides it): "+format, args...)
	}
	t.Skipf(format, args...)
}

// Tool returns the path of the program name on PATH, or ends t with
// Missing: unchecked says what goes unchecked without it, pkg what
// installs it (a Debian package).
func Tool(t testing.TB, name, pkg, unchecked string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed: %s (apt-get install %s)", name, unchecked, pkg)
	}
	return bin
}
