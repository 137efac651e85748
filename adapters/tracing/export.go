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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter is otlptrace's Exporter with the spans encoded by hand into
// buffers it keeps from one batch to the next (export_wire.go).
// otlptrace's converts each span into about 17 allocations of its own
// (the span, its status, and for each attribute a KeyValue, an AnyValue
// and its oneof), which the client's proto.Marshal then walks by
// reflection: with every request sampled, over a fifth of the objects
// the server allocated in the traced read and, with the conversion done
// over kept arrays, still a twentieth of its CPU (docs/performance.md,
// "Traces"). What goes on the wire decodes to the same messages
// (TestExporter_same_export); the client, otlptracehttp's, still reads
// every OTEL_EXPORTER_OTLP_* variable, and sends, retries and times out
// as it did.
type exporter struct {
	client otlptrace.Client

	// mu keeps two exports from sharing the buffers; the batch span
	// processor makes one at a time anyway.
	mu   sync.Mutex
	slab slab
	// stop stops the client once: otlptracehttp's panics on a second.
	stop sync.Once
}

// slab holds the encoded spans of one export, a buffer for each group of
// spans of one resource and scope, and the scratch one span is encoded in
// before its length is known. The buffers are emptied after the upload
// and kept: an export is as large as the batch, whose size is bounded
// (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).
type slab struct {
	groups [][]byte
	span   []byte
}

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

func (s *slab) clear() {
	for i := range s.groups {
		s.groups[i] = s.groups[i][:0]
	}
}

// group is the spans of one resource and scope, as OTLP nests them; the
// slab's buffer of the same index holds them.
type group struct {
	res   attribute.Distinct
	scope instrumentation.Scope
	ss    *tracepb.ScopeSpans
}

// convert returns the messages of spans, grouped by resource, then by
// scope, in the order they first appear. Each ScopeSpans carries its
// spans already encoded, as the bytes of its repeated field 2 (spans) in
// its unknown fields, which proto.Marshal writes as they are: the
// receiver reads them as the spans they are.
func (s *slab) convert(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	var rss []*tracepb.ResourceSpans
	var resources []attribute.Distinct
	var groups []group
	for _, sd := range spans {
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
			if g == len(s.groups) {
				s.groups = append(s.groups, nil)
			}
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
		s.span = appendSpan(s.span[:0], sd)
		s.groups[g] = protowire.AppendBytes(protowire.AppendTag(s.groups[g], scopeSpansSpans, protowire.BytesType), s.span)
	}
	for g := range groups {
		groups[g].ss.ProtoReflect().SetUnknown(protoreflect.RawFields(s.groups[g]))
	}
	return rss
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
