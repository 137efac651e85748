package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// The W3C Trace Context headers, as the propagator names them.
const (
	traceparentHeader = "traceparent"
	tracestateHeader  = "tracestate"
)

// maxTraceState is the longest tracestate an outbox message keeps: what
// W3C Trace Context asks every propagator to pass on (§3.3.1.5). Longer,
// its entries are dropped as the specification says: those over
// maxTraceStateEntry first, then from the end.
const (
	maxTraceState      = 512
	maxTraceStateEntry = 128
)

// TraceContexts carry the trace of a request to the outbox's delivery of
// what it queued (ports.TraceContexts): the message keeps the W3C trace
// context, its traceparent followed, when there is one, by a space and
// its tracestate (a traceparent holds no space); the delivery resumes it
// as a remote parent, so the delivery's span is a child in the request's
// trace and the webhook's POST carries a traceparent of that trace. The
// baggage is not kept: it may hold what a caller would not have stored.
// Off, it returns nil: the application then keeps and resumes nothing.
func (t *Tracing) TraceContexts() ports.TraceContexts {
	if !t.On() {
		return nil
	}
	return traceContexts{}
}

type traceContexts struct{}

// Current implements ports.TraceContexts.
func (traceContexts) Current(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	sc = sc.WithTraceState(boundedTraceState(sc.TraceState()))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(ctx, sc), carrier)
	tc := carrier[traceparentHeader]
	if state := carrier[tracestateHeader]; state != "" {
		tc += " " + state
	}
	if len(tc) > domain.MaxTraceContext {
		// Only a traceparent of a later version could make it so.
		return ""
	}
	return tc
}

// Resume implements ports.TraceContexts.
func (traceContexts) Resume(ctx context.Context, tc string) context.Context {
	if tc == "" {
		return ctx
	}
	parent, state, _ := strings.Cut(tc, " ")
	carrier := propagation.MapCarrier{traceparentHeader: parent}
	if state != "" {
		carrier[tracestateHeader] = state
	}
	// An unreadable traceparent leaves ctx as it is.
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// boundedTraceState is ts within maxTraceState characters, its entries
// dropped as W3C Trace Context says: the long ones first, then from the
// end.
func boundedTraceState(ts trace.TraceState) trace.TraceState {
	if len(ts.String()) <= maxTraceState {
		return ts
	}
	var keys, long []string
	ts.Walk(func(k, v string) bool {
		keys = append(keys, k)
		if len(k)+1+len(v) > maxTraceStateEntry {
			long = append(long, k)
		}
		return true
	})
	for _, k := range long {
		ts = ts.Delete(k)
	}
	for i := len(keys) - 1; i >= 0 && len(ts.String()) > maxTraceState; i-- {
		ts = ts.Delete(keys[i])
	}
	return ts
}
