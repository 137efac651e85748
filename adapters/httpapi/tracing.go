package httpapi

import (
	"sync"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the span of each request, when Options.TracerProvider is
// set. It is the outermost middleware, so that the access log, the
// request id's and every later line of the request are written within
// the span, and carry its trace id (LogHandler).
type tracer struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	// starts holds a spanStart by route (method and template): built once
	// for each, so that a request's span costs no name nor options of its
	// own (the routes are a fixed set, and an unmatched request's is its
	// method alone).
	starts sync.Map
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

// newTracer returns nil without a provider: the chain then has no tracing
// middleware at all, and a request allocates nothing for it.
func newTracer(opts Options) *tracer {
	if opts.TracerProvider == nil {
		return nil
	}
	p := opts.Propagator
	if p == nil {
		p = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return &tracer{tracer: opts.TracerProvider.Tracer(tracerName), propagator: p}
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

// serve opens the server span of the request: a child of the caller's
// traceparent when there is one, named by the method and the route
// template (gin's FullPath, "GET /api/users/:id"), never the path with
// its ids. It records the route, the method and the status; not the
// path, the query string (?email=), a header or the client's address.
func (t *tracer) serve(c *gin.Context) {
	ctx := t.propagator.Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
	st := t.start(c.Request.Method, c.FullPath())
	ctx, span := t.tracer.Start(ctx, st.name, st.opts...)
	defer span.End()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
	status := c.Writer.Status()
	// The attributes are all set here, in one call: the SDK copies those
	// of the start options into the span, then grows its copy at each
	// call; set at the start and at the end, they cost four allocations
	// where this makes two (BenchmarkRead_traces). The method and the
	// route are known at the start, but only a sampler reads attributes
	// there, and none of those OTEL_TRACES_SAMPLER can name does.
	attrs := make([]attribute.KeyValue, len(st.attrs), len(st.attrs)+2)
	copy(attrs, st.attrs)
	attrs = append(attrs, attribute.Int("http.response.status_code", status))
	if id := RequestID(c.Request.Context()); id != "" {
		attrs = append(attrs, attribute.String("userd.request_id", id))
	}
	span.SetAttributes(attrs...)
	// A 4xx is the client's doing, not a fault of the server's span.
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}
