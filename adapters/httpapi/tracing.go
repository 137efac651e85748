package httpapi

import (
	"context"
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the span of each request, when Options.TracerProvider is
// set: requestID, the outermost middleware, begins and ends it.
type tracer struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	// fields are the request headers the propagator reads (traceparent,
	// tracestate, baggage), canonical: a request with none of them, the
	// common case, is not handed to Extract, which would look each up.
	fields []string
	// starts holds a spanStart by route (method and template): built once
	// for each, so that a request's span costs no name nor options of its
	// own (the routes are a fixed set, and an unmatched request's is its
	// method alone).
	starts sync.Map
	// attrs holds the slices a span's attributes are set from, which the
	// SDK copies: reused, they are not a request's garbage.
	attrs sync.Pool
}

// spanStart is how a route's spans begin and what they record of the
// route: their name, start options and the method and route attributes.
type spanStart struct {
	name  string
	opts  []trace.SpanStartOption
	attrs []attribute.KeyValue
}

// routeKey is the key of starts.
type routeKey struct{ method, route string }

// newTracer returns nil without a provider: the chain then traces
// nothing, and a request allocates nothing for it.
func newTracer(opts Options) *tracer {
	if opts.TracerProvider == nil {
		return nil
	}
	p := opts.Propagator
	if p == nil {
		p = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	t := &tracer{tracer: opts.TracerProvider.Tracer(tracerName), propagator: p}
	for _, f := range p.Fields() {
		t.fields = append(t.fields, http.CanonicalHeaderKey(f))
	}
	t.attrs.New = func() any { s := make([]attribute.KeyValue, 0, 4); return &s }
	return t
}

// tracerName is the instrumentation scope of the HTTP spans.
const tracerName = "github.com/userd/userd/adapters/httpapi"

// start returns the spanStart of a route, made the first time.
func (t *tracer) start(method, route string) *spanStart {
	key := routeKey{method, route}
	if st, ok := t.starts.Load(key); ok {
		return st.(*spanStart)
	}
	name := method
	attrs := []attribute.KeyValue{attribute.String("http.request.method", method)}
	if route != "" {
		name += " " + route
		attrs = append(attrs, attribute.String("http.route", route))
	}
	st, _ := t.starts.LoadOrStore(key, &spanStart{name: name, attrs: attrs,
		opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}})
	return st.(*spanStart)
}

// begin opens the server span of the request in ctx: a child of the
// caller's traceparent when there is one, named by the method and the
// route template (gin's FullPath, "GET /api/users/:id"), never the path
// with its ids. end takes the span and its spanStart.
func (t *tracer) begin(ctx context.Context, c *gin.Context) (context.Context, trace.Span, *spanStart) {
	for _, f := range t.fields {
		if _, ok := c.Request.Header[f]; ok {
			ctx = t.propagator.Extract(ctx, propagation.HeaderCarrier(c.Request.Header))
			break
		}
	}
	st := t.start(c.Request.Method, c.FullPath())
	ctx, span := t.tracer.Start(ctx, st.name, st.opts...)
	return ctx, span, st
}

// end closes the span begun for c once the request is answered. It
// records the route, the method, the status and the request id; not the
// path, the query string (?email=), a header or the client's address.
func (t *tracer) end(c *gin.Context, span trace.Span, st *spanStart) {
	status := c.Writer.Status()
	// The attributes are all set here, in one call: the SDK copies those
	// of the start options into the span, then grows its copy at each
	// call; set at the start and at the end, they cost four allocations
	// where this makes two (BenchmarkRead_traces). The method and the
	// route are known at the start, but only a sampler reads attributes
	// there, and none of those OTEL_TRACES_SAMPLER can name does.
	buf := t.attrs.Get().(*[]attribute.KeyValue)
	attrs := append((*buf)[:0], st.attrs...)
	attrs = append(attrs, attribute.Int("http.response.status_code", status))
	if id := RequestID(c.Request.Context()); id != "" {
		attrs = append(attrs, attribute.String("userd.request_id", id))
	}
	span.SetAttributes(attrs...)
	clear(attrs) // the pool keeps no request's strings
	*buf = attrs[:0]
	t.attrs.Put(buf)
	// A 4xx is the client's doing, not a fault of the server's span.
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}
