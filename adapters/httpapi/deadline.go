package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// lazyDeadline is the request's context with its timeout, as
// context.WithDeadline gives it, but with the timer made only when
// something waits on it. context.WithTimeout makes a timer and joins the
// parent (net/http's request context) at once: five allocations and a
// timer started and stopped on every request, 4 % of the CPU of a read
// served from the caches, which never waits on its context
// (docs/performance.md, "Speed, sixth pass"). A request that reaches the
// database, a hook or a mail server waits on Done, which arms the real
// context.WithDeadline then: from that moment it is that context.
//
// Before it is armed, it answers from the deadline and the parent: Err
// is the parent's error, or DeadlineExceeded once the deadline has
// passed (and it arms then, so that context.Cause agrees); Deadline is
// the earlier of the two; Value is the parent's. Contexts made from it
// join it without a goroutine: Done arms it, and then Value gives them
// the armed context's own cancellation, as for any context.WithDeadline;
// AfterFunc is there for the rest.
type lazyDeadline struct {
	parent   context.Context
	deadline time.Time

	armed atomic.Pointer[armedDeadline]
	// mu serialises arming and release, so that exactly one real
	// context is made and released.
	mu       sync.Mutex
	released atomic.Bool
}

type armedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc
}

var _ context.Context = (*lazyDeadline)(nil)

func newLazyDeadline(parent context.Context, deadline time.Time) *lazyDeadline {
	return &lazyDeadline{parent: parent, deadline: deadline}
}

// arm returns the real context, made on the first call: with the
// deadline, or, once the request is over, already cancelled, as the
// context of a finished request is.
func (c *lazyDeadline) arm() context.Context {
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	ctx, cancel := context.WithDeadline(c.parent, c.deadline)
	if c.released.Load() {
		cancel()
	}
	c.armed.Store(&armedDeadline{ctx: ctx, cancel: cancel})
	return ctx
}

// release is the CancelFunc: it ends the context, as the request ends.
func (c *lazyDeadline) release() {
	c.mu.Lock()
	c.released.Store(true)
	a := c.armed.Load()
	c.mu.Unlock()
	if a != nil {
		a.cancel()
	}
}

// Deadline implements context.Context.
func (c *lazyDeadline) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context: it arms the deadline.
func (c *lazyDeadline) Done() <-chan struct{} { return c.arm().Done() }

// Err implements context.Context.
func (c *lazyDeadline) Err() error {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Err()
	}
	if c.released.Load() {
		return c.arm().Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return c.arm().Err()
	}
	return nil
}

// Value implements context.Context: the armed context's once armed, so
// that context.Cause and the contexts made from this one find its
// cancellation; the parent's before.
func (c *lazyDeadline) Value(key any) any {
	if a := c.armed.Load(); a != nil {
		return a.ctx.Value(key)
	}
	return c.parent.Value(key)
}

// AfterFunc is what the context package calls, when a context is made
// from this one, if it cannot find a cancellation of its own package
// in Value: it arms the deadline and runs f when that ends.
func (c *lazyDeadline) AfterFunc(f func()) (stop func() bool) {
	return context.AfterFunc(c.arm(), f)
}
