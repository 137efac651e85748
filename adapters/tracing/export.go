package tracing

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter sends the spans by otlptracehttp's client, encoded by hand
// into buffers it keeps from one batch to the next (export_wire.go).
// otlptrace's exporter converts each span into about 17 allocations of
// its own (the span, its status, and for each attribute a KeyValue, an
// AnyValue and its oneof), which the client's proto.Marshal then walks by
// reflection: with every request sampled, over a fifth of the objects
// the server allocated in the traced read and, with the conversion done
// over kept arrays, still a twentieth of its CPU (docs/performance.md,
// "Traces"). What goes on the wire decodes to what the SDK and
// otlptrace's exporter send (TestProvider_exports_what_the_SDK_exports);
// the client still reads every OTEL_EXPORTER_OTLP_* variable, and sends,
// retries and times out as it does for them.
type exporter struct {
	client otlptrace.Client
	// resource is every span's: userd has one.
	resource          *resourcepb.Resource
	resourceSchemaURL string

	// slab is used by one export at a time: the batch's, which makes
	// one at a time (batcher.exporting), are the only ones.
	slab slab
	// stop stops the client once: otlptracehttp's panics on a second.
	stop sync.Once
}

// slab holds the encoded spans of one export, a buffer for each scope's
// spans, and the scratch one span is encoded in before its length is
// known. The buffers are emptied after the upload and kept: an export is
// as large as the batch, whose size is bounded
// (OTEL_BSP_MAX_EXPORT_BATCH_SIZE).
type slab struct {
	groups [][]byte
	span   []byte
}

func newExporter(client otlptrace.Client, res *resource.Resource) *exporter {
	return &exporter{client: client, resource: resourceOf(res), resourceSchemaURL: res.SchemaURL()}
}

// Start starts the client (otlptracehttp's does nothing but check its
// settings).
func (e *exporter) Start(ctx context.Context) error { return e.client.Start(ctx) }

// export uploads spans, ended, in one request.
func (e *exporter) export(ctx context.Context, spans []*span) error {
	if len(spans) == 0 {
		return nil
	}
	rs := &tracepb.ResourceSpans{Resource: e.resource, SchemaUrl: e.resourceSchemaURL, ScopeSpans: e.slab.convert(spans)}
	defer e.slab.clear()
	if err := e.client.UploadTraces(ctx, []*tracepb.ResourceSpans{rs}); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown stops the client.
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

// convert returns the spans grouped by scope, in the order the scopes
// first appear. Each ScopeSpans carries its spans already encoded, as the
// bytes of its repeated field 2 (spans) in its unknown fields, which
// proto.Marshal writes as they are: the receiver reads them as the spans
// they are.
func (s *slab) convert(spans []*span) []*tracepb.ScopeSpans {
	var tracers []*tracer
	var out []*tracepb.ScopeSpans
	for _, sp := range spans {
		g := slices.Index(tracers, sp.tracer)
		if g < 0 {
			tracers = append(tracers, sp.tracer)
			out = append(out, &tracepb.ScopeSpans{Scope: scopeOf(sp.tracer.scope), SchemaUrl: sp.tracer.scope.SchemaURL})
			g = len(out) - 1
			if g == len(s.groups) {
				s.groups = append(s.groups, nil)
			}
		}
		s.span = appendSpan(s.span[:0], sp)
		s.groups[g] = protowire.AppendBytes(protowire.AppendTag(s.groups[g], scopeSpansSpans, protowire.BytesType), s.span)
	}
	for g, ss := range out {
		ss.ProtoReflect().SetUnknown(protoreflect.RawFields(s.groups[g]))
	}
	return out
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
func spanFlags(tf trace.TraceFlags, remote bool) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if remote {
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
