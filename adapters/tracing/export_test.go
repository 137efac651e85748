package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver keeps the bodies of the OTLP/HTTP exports it is sent.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (r *receiver) requests(t *testing.T) []*coltracepb.ExportTraceServiceRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*coltracepb.ExportTraceServiceRequest
	for _, b := range r.bodies {
		req := &coltracepb.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(b, req); err != nil {
			t.Fatal(err)
		}
		// otlptrace's order of the resources is a map's.
		slices.SortFunc(req.ResourceSpans, func(a, b *tracepb.ResourceSpans) int {
			return strings.Compare(a.Resource.String(), b.Resource.String())
		})
		out = append(out, req)
	}
	return out
}

// stubs are spans with a bit of everything a span may hold, over two
// resources and two scopes.
func stubs(n int) []sdktrace.ReadOnlySpan {
	res := []*resource.Resource{
		resource.NewSchemaless(attribute.String("service.name", "userd"), attribute.String("service.version", "1")),
		resource.NewSchemaless(attribute.String("service.name", "other")),
	}
	scopes := []instrumentation.Scope{{Name: "a", Version: "1"}, {Name: "b", SchemaURL: "https://x/1.0",
		Attributes: attribute.NewSet(attribute.Bool("k", true))}}
	tid := trace.TraceID{1, 2, 3}
	var ss tracetest.SpanStubs
	for i := range n {
		parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, byte(i)}, Remote: i%2 == 0})
		ts, _ := trace.ParseTraceState("k=v")
		ss = append(ss, tracetest.SpanStub{
			Name:        "GET /api/users/:id",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, byte(i)}, TraceFlags: trace.FlagsSampled, TraceState: ts}),
			Parent:      parent,
			SpanKind:    trace.SpanKind(i % 6),
			StartTime:   time.Unix(100, int64(i)),
			EndTime:     time.Unix(101, int64(i)),
			Attributes: []attribute.KeyValue{attribute.String("http.route", "/api/users/:id"), attribute.Int("status", 200+i),
				attribute.Bool("b", true), attribute.Float64("f", 1.5), attribute.StringSlice("ss", []string{"x", "y"}),
				attribute.Int64Slice("is", []int64{1, 2}), attribute.BoolSlice("bs", []bool{true}), attribute.Float64Slice("fs", []float64{2.5})},
			Events:            []sdktrace.Event{{Name: "exception", Time: time.Unix(100, 5), Attributes: []attribute.KeyValue{attribute.String("m", "x")}, DroppedAttributeCount: 1}},
			Links:             []sdktrace.Link{{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.Int("n", 1)}, DroppedAttributeCount: 2}},
			Status:            sdktrace.Status{Code: codes.Code(i % 3), Description: map[bool]string{true: "boom"}[i%3 == 1]},
			DroppedAttributes: i, DroppedEvents: 2 * i, DroppedLinks: 3 * i,
			Resource:             res[i%len(res)],
			InstrumentationScope: scopes[i/2%len(scopes)],
		})
	}
	if n > 0 {
		ss[0].Attributes, ss[0].Events, ss[0].Links = nil, nil, nil
	}
	return ss.Snapshots()
}

// Our exporter sends what otlptrace's sends, batch after batch (the
// second, smaller, over the arrays the first left).
func TestExporter_same_export(t *testing.T) {
	t.Parallel()
	ours, theirs := &receiver{}, &receiver{}
	oursSrv, theirsSrv := httptest.NewServer(ours), httptest.NewServer(theirs)
	defer oursSrv.Close()
	defer theirsSrv.Close()
	ctx := context.Background()
	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(theirsSrv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(oursSrv.URL + "/v1/traces")))
	if err := exp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{9, 3, 0, 12} {
		batch := stubs(n)
		if err := official.ExportSpans(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, want := ours.requests(t), theirs.requests(t)
	if len(got) != len(want) || len(got) != 3 {
		t.Fatalf("%d exports, otlptrace's %d; want 3", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("export %d:\n ours   %v\n theirs %v", i, got[i], want[i])
		}
	}
	for range 2 {
		if err := exp.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := official.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// A failed upload is an error of the export, and the next export starts
// afresh.
func TestExporter_upload_error(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{})))
	err := exp.ExportSpans(context.Background(), stubs(2))
	if err == nil || !strings.Contains(err.Error(), "traces export") {
		t.Fatalf("export to a 400: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// BenchmarkExport prices the export of a batch of 512 spans like a
// read's (four attributes), to a receiver that drops it: ours against
// otlptrace's exporter, both over otlptracehttp's client.
// go test ./adapters/tracing -run '^$' -bench Export -benchmem
func BenchmarkExport(b *testing.B) {
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer drop.Close()
	res := resource.NewSchemaless(attribute.String("service.name", "userd"))
	var ss tracetest.SpanStubs
	for i := range 512 {
		ss = append(ss, tracetest.SpanStub{
			Name:        "GET /api/users/me",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, byte(i)}, SpanID: trace.SpanID{2, byte(i)}, TraceFlags: trace.FlagsSampled}),
			SpanKind:    trace.SpanKindServer,
			StartTime:   time.Unix(100, 0), EndTime: time.Unix(100, 50000),
			Attributes: []attribute.KeyValue{attribute.String("http.request.method", "GET"), attribute.String("http.route", "/api/users/me"),
				attribute.Int("http.response.status_code", 200), attribute.String("userd.request_id", "5f0c6c1e9a0b4c7d")},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: "github.com/userd/userd/adapters/httpapi"},
		})
	}
	batch := ss.Snapshots()
	ctx := context.Background()
	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(drop.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		exp  sdktrace.SpanExporter
	}{{"otlptrace", official}, {"ours", newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(drop.URL + "/v1/traces")))}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.exp.ExportSpans(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A string that is not UTF-8 (a span name, an attribute's key or value,
// a status) goes out with U+FFFD in place of its bad bytes: protobuf
// strings must be UTF-8, and otlptrace's exporter fails the whole batch
// on marshalling one, where ours keeps the other spans and this one.
func TestExporter_invalid_utf8(t *testing.T) {
	t.Parallel()
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(srv.URL + "/v1/traces")))
	spans := stubs(2)
	bad := tracetest.SpanStubFromReadOnlySpan(spans[1])
	bad.Name = "bad /a\xffb"
	bad.Attributes = []attribute.KeyValue{attribute.String("k\xfe", "v\xfd"), attribute.Int("n", -3)}
	bad.Events, bad.Links = nil, nil
	bad.Status = sdktrace.Status{Code: codes.Error, Description: "x\xc3"}
	if err := exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{spans[0], bad.Snapshot()}); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests(t)
	if len(reqs) != 1 {
		t.Fatalf("%d exports, want 1", len(reqs))
	}
	var got *tracepb.Span
	n := 0
	for _, rs := range reqs[0].ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				n++
				if strings.HasPrefix(s.Name, "bad ") {
					got = s
				}
			}
		}
	}
	if n != 2 || got == nil {
		t.Fatalf("%d spans exported, want both, the bad one among them: %v", n, reqs[0])
	}
	if got.Name != "bad /a\uFFFDb" || got.Status.GetMessage() != "x\uFFFD" || got.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("name %q, status %v", got.Name, got.Status)
	}
	if len(got.Attributes) != 2 || got.Attributes[0].Key != "k\uFFFD" || got.Attributes[0].Value.GetStringValue() != "v\uFFFD" ||
		got.Attributes[1].Value.GetIntValue() != -3 {
		t.Errorf("attributes %v", got.Attributes)
	}
}
