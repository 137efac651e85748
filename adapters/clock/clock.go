// Package clock provides the real-time implementation of ports.Clock.
package clock

import (
	"time"

	"github.com/userd/userd/ports"
)

// System reads the machine's clock, in UTC.
type System struct{}

var _ ports.Clock = System{}

// Now returns the current time in UTC.
func (System) Now() time.Time { return time.Now().UTC() }
