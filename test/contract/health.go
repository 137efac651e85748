package contract

import (
	"testing"

	"github.com/userd/userd/ports"
)

// HealthChecker runs the contract of ports.HealthChecker for a store that
// is up: Ping succeeds. How a store that is down answers is up to each
// adapter's own tests, as only they can take it down.
func HealthChecker(t *testing.T, newChecker func(t *testing.T) ports.HealthChecker) {
	t.Run("ping", func(t *testing.T) {
		t.Parallel()
		if err := newChecker(t).Ping(t.Context()); err != nil {
			t.Errorf("Ping: %v", err)
		}
	})
}
