// Package clock provides the real-time implementation of ports.Clock.
package clock

import (
	"sync"
	"time"

	"github.com/userd/userd/ports"
)

// System reads the machine's clock, in UTC.
type System struct{}

var _ ports.Clock = System{}

// Now returns the current time in UTC.
func (System) Now() time.Time { return time.Now().UTC() }

// Manual is a clock that moves only when told to, for tests of expiry,
// grace windows and lock-outs. It is safe for concurrent use.
type Manual struct {
	mu  sync.Mutex
	now time.Time
}

var _ ports.Clock = (*Manual)(nil)

// NewManual returns a Manual clock showing t.
func NewManual(t time.Time) *Manual { return &Manual{now: t} }

// Now returns the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
