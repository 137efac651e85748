package userdproc

import (
	"os"
	"testing"
)

// RedisURL returns USERD_TEST_REDIS_URL, the Redis of the tests (e.g.
// redis://127.0.0.1:6379/15). Without it it skips the test, or fails it
// when CI=true (CI must run every Redis test). Tests share that Redis:
// each keeps to keys of its own (a client address of its own, for the
// per-IP limits).
func RedisURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("USERD_TEST_REDIS_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("USERD_TEST_REDIS_URL not set in CI: the Redis tests must run")
		}
		t.Skip("USERD_TEST_REDIS_URL not set: Redis tests skipped")
	}
	return u
}
