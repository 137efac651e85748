package userdproc

import (
	"os"
	"testing"

	"github.com/userd/userd/test/kit"
)

// RequiredEnv returns the environment variable name, which points the
// tests at a service (what names them: "PostgreSQL", "MySQL", "Redis").
// Without it it skips the test, or fails it when CI=true: CI must run
// every test of every service.
func RequiredEnv(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		kit.Missing(t, "%s not set: the %s tests need it", name, what)
	}
	return v
}
