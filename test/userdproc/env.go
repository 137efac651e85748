package userdproc

import (
	"os"
	"testing"
)

// RequiredEnv returns the environment variable name, which points the
// tests at a service (what names them: "PostgreSQL", "MySQL", "Redis").
// Without it it skips the test, or fails it when CI=true: CI must run
// every test of every service.
func RequiredEnv(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not set in CI: the %s tests must run", name, what)
		}
		t.Skipf("%s not set: %s tests skipped", name, what)
	}
	return v
}
