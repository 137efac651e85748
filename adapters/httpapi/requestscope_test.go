package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
)

type ctxKey struct{}

// startedDeadline is a lazyDeadline as deadline leaves it: started.
func startedDeadline(parent context.Context, deadline time.Time) *lazyDeadline {
	c := &lazyDeadline{parent: parent}
	c.start(deadline)
	return c
}

// TestLazyDeadline_behaves_as_WithDeadline: what context.WithDeadline
// promises, lazyDeadline keeps, armed or not.
func TestLazyDeadline_behaves_as_WithDeadline(t *testing.T) {
	t.Run("unstarted_is_its_parent", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
		defer cancel()
		ctx := &lazyDeadline{parent: parent}
		if _, ok := ctx.Deadline(); ok {
			t.Fatal("a deadline before start")
		}
		if ctx.Done() != parent.Done() || ctx.Value(ctxKey{}) != "v" || ctx.armed.Load() != nil {
			t.Fatal("unstarted, it is not its parent")
		}
		ctx.start(time.Now().Add(time.Hour))
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Fatalf("Deadline %v %v after start", d, ok)
		}
		cancel()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatalf("Err %v after the parent's cancel", ctx.Err())
		}
		ctx.release()
	})
	t.Run("scope_found_under_values", func(t *testing.T) {
		scope := newRequestScope(context.Background())
		scope.meta = domain.RequestMeta{RequestID: "req-1", ClientIP: "192.0.2.7"}
		under := context.WithValue(scope, ctxKey{}, "v")
		if domain.RequestMetaFrom(under) != scope.meta || RequestID(under) != "req-1" {
			t.Fatal("the scope's meta is not the request's")
		}
		c := &gin.Context{Request: httptest.NewRequestWithContext(under, http.MethodGet, "/", nil)}
		if scopeOf(c) != scope || scopeOf(c).loggedUserID() != "" {
			t.Fatal("scopeOf did not find the scope under a value")
		}
		scope.principal = &domain.Principal{UserID: "caller"}
		if principal(c).UserID != "caller" || scope.loggedUserID() != "caller" {
			t.Fatal("the principal is not the scope's")
		}
		scope.userID = "signed-in"
		if scope.loggedUserID() != "signed-in" {
			t.Fatal("the access log would not name the account signed in")
		}
		c.Request = httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/", nil)
		if scopeOf(c) != nil || principal(c) != nil {
			t.Fatal("a scope outside the chain")
		}
	})
	t.Run("unarmed_until_waited_on", func(t *testing.T) {
		parent := context.WithValue(context.Background(), ctxKey{}, "v")
		ctx := startedDeadline(parent, time.Now().Add(time.Hour))
		defer ctx.release()
		if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
			t.Fatalf("Deadline %v %v", d, ok)
		}
		if ctx.Err() != nil || ctx.Value(ctxKey{}) != "v" {
			t.Fatalf("Err %v, Value %v", ctx.Err(), ctx.Value(ctxKey{}))
		}
		if ctx.armed.Load() != nil {
			t.Fatal("armed without a wait")
		}
		select {
		case <-ctx.Done():
			t.Fatal("done before its deadline")
		default:
		}
		if ctx.armed.Load() == nil {
			t.Fatal("Done did not arm it")
		}
	})
	t.Run("deadline_fires_once_armed", func(t *testing.T) {
		ctx := startedDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
		defer ctx.release()
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the deadline did not fire")
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("Err %v, Cause %v", ctx.Err(), context.Cause(ctx))
		}
	})
	t.Run("deadline_passed_unarmed", func(t *testing.T) {
		ctx := startedDeadline(context.Background(), time.Now().Add(-time.Second))
		defer ctx.release()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err %v", ctx.Err())
		}
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("Cause %v", context.Cause(ctx))
		}
		<-ctx.Done()
	})
	t.Run("parent_cancelled", func(t *testing.T) {
		for _, armFirst := range []bool{false, true} {
			parent, cancel := context.WithCancel(context.Background())
			ctx := startedDeadline(parent, time.Now().Add(time.Hour))
			if armFirst {
				_ = ctx.Done()
			}
			cancel()
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("armed first %v: Err %v", armFirst, ctx.Err())
			}
			<-ctx.Done()
			ctx.release()
		}
	})
	t.Run("earlier_parent_deadline", func(t *testing.T) {
		parent, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Minute))
		defer cancel()
		ctx := startedDeadline(parent, time.Now().Add(time.Hour))
		defer ctx.release()
		if d, _ := ctx.Deadline(); time.Until(d) > 2*time.Minute {
			t.Fatalf("Deadline %v: not the parent's", d)
		}
	})
	t.Run("released", func(t *testing.T) {
		for _, armFirst := range []bool{false, true} {
			ctx := startedDeadline(context.Background(), time.Now().Add(time.Hour))
			if armFirst {
				_ = ctx.Done()
			}
			ctx.release()
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("armed first %v: Err %v after release", armFirst, ctx.Err())
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("armed first %v: not done after release", armFirst)
			}
		}
	})
	t.Run("children_join_without_a_goroutine", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		defer cancelParent()
		ctx := startedDeadline(parent, time.Now().Add(time.Hour))
		before := runtime.NumGoroutine()
		var children []context.Context
		for range 50 {
			child, cancel := context.WithCancel(context.WithValue(ctx, ctxKey{}, 1))
			defer cancel()
			children = append(children, child)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Fatalf("%d goroutines more for 50 children", n-before)
		}
		ctx.release()
		for _, child := range children {
			select {
			case <-child.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("a child outlived the request")
			}
		}
	})
	t.Run("concurrent_waits_arm_once", func(t *testing.T) {
		ctx := startedDeadline(context.Background(), time.Now().Add(time.Hour))
		var wg sync.WaitGroup
		chans := make([]<-chan struct{}, 16)
		for i := range chans {
			wg.Go(func() { chans[i] = ctx.Done() })
		}
		wg.Wait()
		for _, ch := range chans {
			if ch != chans[0] {
				t.Fatal("two armed contexts")
			}
		}
		ctx.release()
		<-chans[0]
	})
}
