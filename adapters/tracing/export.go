package tracing

import (
	"context"
	"fmt"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// exporter is otlptrace's Exporter with the conversion of the spans to
// their protobuf messages done over arrays it keeps from one batch to the
// next. otlptrace's converts each span into about 17 allocations of its
// own (the span, its status, and for each attribute a KeyValue, an
// AnyValue and its oneof): with every request sampled, over a fifth of
// the objects the server allocated in the traced read (docs/performance.md,
// "Traces"). What goes on the wire is the same (TestExporter_same_export);
// the client, otlptracehttp's, still reads every OTEL_EXPORTER_OTLP_*
// variable, and sends, retries and times out as it did.
type exporter struct {
	client otlptrace.Client

	// mu keeps two exports from sharing the arrays; the batch span
	// processor makes one at a time anyway.
	mu   sync.Mutex
	slab slab
	// stop stops the client once: otlptracehttp's panics on a second.
	stop sync.Once
}

// slab holds the messages of one export: each array is sized for the
// batch before any pointer into it is taken, and cleared after the
// upload, so that no span outlives its export through it.
type slab struct {
	spans    []tracepb.Span
	spanPtrs []*tracepb.Span
	statuses []tracepb.Status
	// ids are the trace, span and parent span ids, which the messages
	// hold as slices: of a local array, each would be an allocation.
	ids    [][3]idBytes
	kvs    []commonpb.KeyValue
	kvPtrs []*commonpb.KeyValue
	values []commonpb.AnyValue
	strs   []commonpb.AnyValue_StringValue
	ints   []commonpb.AnyValue_IntValue
}

// idBytes holds a trace id, or a span id in its first 8 bytes.
type idBytes [16]byte

func newExporter(client otlptrace.Client) *exporter { return &exporter{client: client} }

var _ sdktrace.SpanExporter = (*exporter)(nil)

// Start starts the client (otlptracehttp's does nothing but check its
// settings).
func (e *exporter) Start(ctx context.Context) error { return e.client.Start(ctx) }

// ExportSpans implements sdktrace.SpanExporter.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rss := e.slab.convert(spans)
	defer e.slab.clear()
	if err := e.client.UploadTraces(ctx, rss); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *exporter) Shutdown(ctx context.Context) error {
	var err error
	e.stop.Do(func() { err = e.client.Stop(ctx) })
	return err
}

// grow returns s with length n, reusing its array when it is long enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (s *slab) clear() {
	clear(s.spans)
	clear(s.spanPtrs)
	clear(s.statuses)
	clear(s.ids)
	clear(s.kvs)
	clear(s.kvPtrs)
	clear(s.values)
	clear(s.strs)
	clear(s.ints)
}

// group is the spans of one resource and scope, as OTLP nests them.
type group struct {
	res   attribute.Distinct
	scope instrumentation.Scope
	ss    *tracepb.ScopeSpans
}

// convert returns the messages of spans, grouped by resource, then by
// scope, in the order they first appear.
func (s *slab) convert(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	nattrs := 0
	for _, sd := range spans {
		nattrs += len(sd.Attributes())
	}
	s.spans, s.spanPtrs, s.statuses = grow(s.spans, len(spans)), grow(s.spanPtrs, len(spans)), grow(s.statuses, len(spans))
	s.ids = grow(s.ids, len(spans))
	s.kvs, s.kvPtrs, s.values = grow(s.kvs, nattrs), grow(s.kvPtrs, nattrs), grow(s.values, nattrs)
	s.strs, s.ints = grow(s.strs, nattrs), grow(s.ints, nattrs)

	var rss []*tracepb.ResourceSpans
	var resources []attribute.Distinct
	var groups []group
	kv := 0
	for i, sd := range spans {
		res, scope := sd.Resource().Equivalent(), sd.InstrumentationScope()
		g := -1
		for j := range groups {
			if groups[j].res == res && groups[j].scope == scope {
				g = j
				break
			}
		}
		if g < 0 {
			ss := &tracepb.ScopeSpans{Scope: scopeOf(scope), SchemaUrl: scope.SchemaURL}
			groups = append(groups, group{res: res, scope: scope, ss: ss})
			g = len(groups) - 1
			r := -1
			for j := range resources {
				if resources[j] == res {
					r = j
					break
				}
			}
			if r < 0 {
				resources = append(resources, res)
				rss = append(rss, &tracepb.ResourceSpans{Resource: resourceOf(sd.Resource()), SchemaUrl: sd.Resource().SchemaURL()})
				r = len(rss) - 1
			}
			rss[r].ScopeSpans = append(rss[r].ScopeSpans, ss)
		}
		s.spanPtrs[i] = s.span(i, sd, &kv)
		groups[g].ss.Spans = append(groups[g].ss.Spans, s.spanPtrs[i])
	}
	return rss
}

// span fills the i-th span's message, its attributes from the kv-th of
// the slab's on.
func (s *slab) span(i int, sd sdktrace.ReadOnlySpan, kv *int) *tracepb.Span {
	sc, parent := sd.SpanContext(), sd.Parent()
	ids := &s.ids[i]
	tid, sid, psid := sc.TraceID(), sc.SpanID(), parent.SpanID()
	copy(ids[0][:], tid[:])
	copy(ids[1][:], sid[:])
	copy(ids[2][:], psid[:])
	st := sd.Status()
	s.statuses[i] = tracepb.Status{Code: statusCode(st.Code), Message: st.Description}
	attrs := sd.Attributes()
	var kvs []*commonpb.KeyValue
	if len(attrs) > 0 {
		kvs = s.kvPtrs[*kv : *kv+len(attrs) : *kv+len(attrs)]
		for j, a := range attrs {
			kvs[j] = s.keyValue(*kv+j, a)
		}
		*kv += len(attrs)
	}
	s.spans[i] = tracepb.Span{
		TraceId:                ids[0][:len(tid)],
		SpanId:                 ids[1][:len(sid)],
		TraceState:             sc.TraceState().String(),
		Status:                 &s.statuses[i],
		StartTimeUnixNano:      unixNano(sd.StartTime().UnixNano()),
		EndTimeUnixNano:        unixNano(sd.EndTime().UnixNano()),
		Links:                  links(sd.Links()),
		Kind:                   spanKind(sd.SpanKind()),
		Name:                   sd.Name(),
		Attributes:             kvs,
		Events:                 events(sd.Events()),
		DroppedAttributesCount: clampUint32(sd.DroppedAttributes()),
		DroppedEventsCount:     clampUint32(sd.DroppedEvents()),
		DroppedLinksCount:      clampUint32(sd.DroppedLinks()),
		Flags:                  spanFlags(sc.TraceFlags(), parent),
	}
	if psid.IsValid() {
		s.spans[i].ParentSpanId = ids[2][:len(psid)]
	}
	return &s.spans[i]
}

// keyValue fills the slab's n-th attribute: a string or an integer (what
// userd's spans hold) from the slab's arrays, any other from the heap.
func (s *slab) keyValue(n int, a attribute.KeyValue) *commonpb.KeyValue {
	switch a.Value.Type() {
	case attribute.STRING:
		s.strs[n] = commonpb.AnyValue_StringValue{StringValue: a.Value.AsString()}
		s.values[n] = commonpb.AnyValue{Value: &s.strs[n]}
	case attribute.INT64:
		s.ints[n] = commonpb.AnyValue_IntValue{IntValue: a.Value.AsInt64()}
		s.values[n] = commonpb.AnyValue{Value: &s.ints[n]}
	default:
		s.values[n] = commonpb.AnyValue{Value: anyValue(a.Value).Value}
	}
	s.kvs[n] = commonpb.KeyValue{Key: string(a.Key), Value: &s.values[n]}
	s.kvPtrs[n] = &s.kvs[n]
	return s.kvPtrs[n]
}

func unixNano(ns int64) uint64 { return uint64(max(0, ns)) } //nolint:gosec // G115: not negative

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32)) //nolint:gosec // G115: clamped
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	default:
		return tracepb.Status_STATUS_CODE_UNSET
	}
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	default:
		return tracepb.Span_SPAN_KIND_UNSPECIFIED
	}
}

// spanFlags are the trace flags and whether the parent (or the linked
// span) is remote, as OTLP 1.x carries them.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func resourceOf(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return nil
	}
	return &resourcepb.Resource{Attributes: iterKeyValues(r.Iter())}
}

func scopeOf(sc instrumentation.Scope) *commonpb.InstrumentationScope {
	if sc == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: sc.Name, Version: sc.Version, Attributes: iterKeyValues(sc.Attributes.Iter())}
}
