package userdproc

import (
	"testing"
)

// RedisURL returns USERD_TEST_REDIS_URL, the Redis of the tests (e.g.
// redis://127.0.0.1:6379/15). Without it it skips the test, or fails it
// when CI=true (CI must run every Redis test). Tests share that Redis:
// each keeps to keys of its own (a client address of its own, for the
// per-IP limits).
func RedisURL(t testing.TB) string {
	t.Helper()
	return RequiredEnv(t, "USERD_TEST_REDIS_URL", "Redis")
}
