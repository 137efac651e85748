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

// spanStart is how a route's spans begin: their name and start options.
type spanStart struct {
	name string
	opts []trace.SpanStartOption
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

// start returns the spanStart of a route, made the first time. The
// method and the route are set at the start, where a sampler sees them.
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
	st, _ := t.starts.LoadOrStore(key, &spanStart{name: name,
		opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}})
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
	// One call for what the end adds: each grows the span's attributes.
	if id := RequestID(c.Request.Context()); id != "" {
		span.SetAttributes(attribute.Int("http.response.status_code", status), attribute.String("userd.request_id", id))
	} else {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	// A 4xx is the client's doing, not a fault of the server's span.
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
}
