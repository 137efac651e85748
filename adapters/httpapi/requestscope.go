package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

// lazyDeadline is the request's context with its timeout, as
// context.WithDeadline gives it, but with the timer made only when
// something waits on it, and in the one context requestID makes.
//
// context.WithTimeout made a timer and joined the parent (net/http's
// request context) at once: five allocations and a timer started and
// stopped on every request, 4 % of the CPU of a read served from the
// caches, which never waits on its context; and the deadline's own
// http.Request copy (WithContext) was the largest allocation of the read
// after the header's (docs/performance.md, "Speed, sixth pass").
//
// requestID makes it, unstarted, in the request's requestScope; deadline
// starts it once the request has its body and an admission slot, as
// the timeout counted from there before, and releases it when the
// request is answered. Unstarted, it is its parent: no deadline. Started,
// it answers Deadline, Err and Value from the deadline and the parent
// until something waits on Done (the database, a hook, a mail server),
// which arms the real context.WithDeadline: from that moment it is that
// context. Err arms it too once the deadline has passed, so that
// context.Cause agrees. Contexts made from it join it without a
// goroutine: Done arms it, and then Value gives them the armed context's
// own cancellation, as for any context.WithDeadline; AfterFunc is there
// for the rest.
type lazyDeadline struct {
	parent context.Context
	// deadline is written once, by start, before started is set.
	deadline time.Time
	started  atomic.Bool

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

// start sets the deadline; once only, before release.
func (c *lazyDeadline) start(deadline time.Time) {
	c.deadline = deadline
	c.started.Store(true)
}

// context returns what the context is now: the armed context, the
// parent before start, or nil (started, not armed).
func (c *lazyDeadline) context() context.Context {
	if a := c.armed.Load(); a != nil {
		return a.ctx
	}
	if !c.started.Load() {
		return c.parent
	}
	return nil
}

// arm returns the real context, made on the first call after start:
// with the deadline, or, once the request is over, already cancelled, as
// the context of a finished request is. Before start it is the parent.
func (c *lazyDeadline) arm() context.Context {
	if ctx := c.context(); ctx != nil {
		return ctx
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
	if !c.started.Load() {
		return c.parent.Deadline()
	}
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context: it arms the deadline.
func (c *lazyDeadline) Done() <-chan struct{} { return c.arm().Done() }

// Err implements context.Context.
func (c *lazyDeadline) Err() error {
	if ctx := c.context(); ctx != nil {
		return ctx.Err()
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

// requestScope is the context requestID gives a request, and what the
// middleware after it keep of the request there: its deadline
// (lazyDeadline), its domain.RequestMeta and who it is from. One object,
// made once: domain.WithRequestMeta boxed the meta into a context of its
// own, and gin's Context.Set made a map and boxed the values, five
// allocations a signed-in request.
type requestScope struct {
	lazyDeadline
	// meta is the request's domain.RequestMeta, answered by Value.
	meta domain.RequestMeta
	// principal is the caller authenticate verified, nil when anonymous.
	principal *domain.Principal
	// userID is the account a sign-in signed in, for the access log
	// (otherwise the principal's).
	userID domain.UserID
}

// requestScopeKey finds a request's requestScope in its context.
type requestScopeKey struct{}

func newRequestScope(parent context.Context) *requestScope {
	return &requestScope{lazyDeadline: lazyDeadline{parent: parent}}
}

// Value implements context.Context: the scope itself for its key, the
// meta for domain's.
func (s *requestScope) Value(key any) any {
	switch key.(type) {
	case requestScopeKey:
		return s
	case domain.RequestMetaKey:
		return &s.meta
	}
	return s.lazyDeadline.Value(key)
}

// scopeOf returns the request's scope, nil outside requestID's chain.
// The request goroutine alone reads and writes its fields.
func scopeOf(c *gin.Context) *requestScope {
	s, _ := c.Request.Context().Value(requestScopeKey{}).(*requestScope)
	return s
}

// loggedUserID is the account the access log names: the one signed in,
// or the caller; empty for none.
func (s *requestScope) loggedUserID() domain.UserID {
	switch {
	case s == nil:
		return ""
	case s.userID != "":
		return s.userID
	case s.principal != nil:
		return s.principal.UserID
	}
	return ""
}
