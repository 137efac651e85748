package tracing

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// provider is userd's trace.TracerProvider: the OpenTelemetry API's, so
// that every adapter traces through the standard interfaces, over spans
// of its own instead of the SDK's. With every request sampled the SDK's
// span cost a cached read about a fifth of its CPU (its start, a snapshot
// copied at its end, a channel to the batch, and their garbage), where
// the goal is a tenth (docs/decisions.md, "Spans of our own behind the
// OpenTelemetry API"). Ours is one allocation that holds its first
// attributes, is handed to the batch as it is once ended (nothing writes
// it after), and is encoded from there (export_wire.go). The SDK still
// gives the samplers and the resource; the variables are read as it reads
// them (settings.go), and the spans go out as its exporter sends them
// (TestProvider_exports_what_the_SDK_exports).
type provider struct {
	embedded.TracerProvider

	settings settings
	batch    *batcher
	// ids makes the spans' ids: random, as the SDK's; a test's are a
	// sequence.
	ids sdktrace.IDGenerator

	mu      sync.Mutex
	tracers map[instrumentation.Scope]*tracer
	down    atomic.Bool
}

// newProvider returns a provider whose ended spans are batched to exp.
func newProvider(s settings, exp *exporter) *provider {
	return &provider{settings: s, ids: randomIDs{}, tracers: map[instrumentation.Scope]*tracer{}, batch: newBatcher(s.batch, exp)}
}

var _ trace.TracerProvider = (*provider)(nil)

// Tracer returns the tracer of the instrumentation scope name and opts
// describe, the same one for the same scope. After Shutdown it is a
// no-op tracer, as the SDK's is.
func (p *provider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	if p.down.Load() {
		return noop.NewTracerProvider().Tracer(name, opts...)
	}
	c := trace.NewTracerConfig(opts...)
	scope := instrumentation.Scope{Name: name, Version: c.InstrumentationVersion(), SchemaURL: c.SchemaURL(),
		Attributes: c.InstrumentationAttributes()}
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.tracers[scope]
	if !ok {
		t = &tracer{provider: p, scope: scope}
		p.tracers[scope] = t
	}
	return t
}

// ForceFlush exports the ended spans waiting in the batch.
func (p *provider) ForceFlush(ctx context.Context) error { return p.batch.flush(ctx) }

// Shutdown exports what is left and stops the exporter; spans that end
// after it are dropped.
func (p *provider) Shutdown(ctx context.Context) error {
	p.down.Store(true)
	return p.batch.shutdown(ctx)
}

// tracer makes the spans of one instrumentation scope.
type tracer struct {
	embedded.Tracer

	provider *provider
	scope    instrumentation.Scope
}

var _ trace.Tracer = (*tracer)(nil)

// Start begins a span, a child of the span in ctx unless
// trace.WithNewRoot says otherwise, as the SDK's tracer does: the
// sampler decides, a dropped span is only a span context carried on, a
// sampled one is recorded and exported when it ends.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg := trace.NewSpanStartConfig(opts...)
	parentCtx := ctx
	var psc trace.SpanContext
	if cfg.NewRoot() {
		parentCtx = trace.ContextWithSpanContext(ctx, psc)
	} else {
		psc = trace.SpanContextFromContext(ctx)
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if psc.TraceID().IsValid() {
		tid, sid = psc.TraceID(), t.provider.ids.NewSpanID(ctx, psc.TraceID())
	} else {
		tid, sid = t.provider.ids.NewIDs(ctx)
	}
	res := t.provider.settings.sampler.ShouldSample(sdktrace.SamplingParameters{
		ParentContext: parentCtx, TraceID: tid, Name: name, Kind: cfg.SpanKind(),
		Attributes: cfg.Attributes(), Links: cfg.Links(),
	})
	flags := psc.TraceFlags() &^ trace.FlagsSampled
	if res.Decision == sdktrace.RecordAndSample {
		flags |= trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: res.Tracestate})
	if res.Decision == sdktrace.Drop {
		d := droppedSpan{sc: sc, provider: t.provider}
		return trace.ContextWithSpan(ctx, d), d
	}
	start := cfg.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{tracer: t, sc: sc, parentID: psc.SpanID(), parentRemote: psc.IsRemote(), kind: trace.ValidateSpanKind(cfg.SpanKind()), name: name, start: start}
	s.attrs = s.inline[:0]
	limits := &t.provider.settings.limits
	for _, l := range cfg.Links() {
		s.addLink(limits, l)
	}
	s.setAttributes(limits, res.Attributes)
	s.setAttributes(limits, cfg.Attributes())
	return trace.ContextWithSpan(ctx, s), s
}

// randomIDs draws the ids from math/rand/v2's generator, as the SDK's
// does: ChaCha8 seeded by the runtime, safe for concurrent use without a
// lock. An id is no secret (it travels in every traceparent); it must
// only not collide. A zero id is invalid and drawn again.
type randomIDs struct{}

func (randomIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64()) //nolint:gosec // G404: an id, not a secret (randomIDs)
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64()) //nolint:gosec // G404: as above
	}
	return tid, randomIDs{}.NewSpanID(ctx, tid)
}

func (randomIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64()) //nolint:gosec // G404: as above
	}
	return sid
}

// droppedSpan is a span the sampler dropped: it records nothing, and
// carries its context to its children and its provider to whoever asks
// the span for one, as the SDK's non-recording span does.
type droppedSpan struct {
	embedded.Span

	sc       trace.SpanContext
	provider *provider
}

func (droppedSpan) End(...trace.SpanEndOption)              {}
func (droppedSpan) AddEvent(string, ...trace.EventOption)   {}
func (droppedSpan) AddLink(trace.Link)                      {}
func (droppedSpan) IsRecording() bool                       { return false }
func (droppedSpan) RecordError(error, ...trace.EventOption) {}
func (d droppedSpan) SpanContext() trace.SpanContext        { return d.sc }
func (droppedSpan) SetStatus(codes.Code, string)            {}
func (droppedSpan) SetName(string)                          {}
func (droppedSpan) SetAttributes(...attribute.KeyValue)     {}
func (d droppedSpan) TracerProvider() trace.TracerProvider  { return d.provider }
