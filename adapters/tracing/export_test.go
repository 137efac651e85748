package tracing

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// seqIDs makes ids in sequence, the same for two providers given the
// same calls.
type seqIDs struct {
	mu sync.Mutex
	n  uint64
}

func (g *seqIDs) next() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return g.n
}

func (g *seqIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	binary.BigEndian.PutUint64(tid[8:], g.next())
	return tid, g.NewSpanID(ctx, tid)
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], g.next())
	return sid
}

// at is a fixed time, i steps after the first.
func at(i int) time.Time { return time.Unix(1_700_000_000, int64(i)*1000) }

// exercise does to tp a bit of everything the trace API lets a span do,
// at fixed times: what two providers given the same ids export of it
// must be the same.
func exercise(tp trace.TracerProvider) {
	a := tp.Tracer("a", trace.WithInstrumentationVersion("1"))
	b := tp.Tracer("b", trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"),
		trace.WithInstrumentationAttributes(attribute.Bool("k", true)))
	ctx, root := a.Start(context.Background(), "GET /api/users/:id", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(at(0)), trace.WithAttributes(attribute.String("http.request.method", "GET"), attribute.Int("n", 1)))
	root.SetAttributes(attribute.Int("n", 2), attribute.Bool("b", true), attribute.Float64("f", 1.5),
		attribute.StringSlice("ss", []string{"x", "yyyyyyyyy"}), attribute.Int64Slice("is", []int64{1, -2}),
		attribute.BoolSlice("bs", []bool{true}), attribute.Float64Slice("fs", []float64{2.5}), attribute.String("", "invalid key"))
	root.SetAttributes(attribute.String("long", "héllo wörld, a long value"),
		attribute.Int("n", 3), attribute.String("more1", "1"), attribute.String("more2", "2"))
	root.AddEvent("first", trace.WithTimestamp(at(1)), trace.WithAttributes(attribute.String("k", "v"), attribute.String("k", "w"), attribute.Int("j", 1)))
	root.AddEvent("second", trace.WithTimestamp(at(2)))
	root.RecordError(errors.New("no answer"), trace.WithTimestamp(at(3)))
	root.RecordError(nil)
	root.SetStatus(codes.Error, "boom")
	root.SetStatus(codes.Unset, "ignored")

	cctx, child := b.Start(ctx, "SELECT users", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(at(4)))
	child.SetStatus(codes.Ok, "ignored too")
	child.SetStatus(codes.Error, "not over Ok")
	child.AddLink(trace.Link{SpanContext: root.SpanContext(), Attributes: []attribute.KeyValue{attribute.Int("l", 1), attribute.Int("m", 2)}})
	child.AddLink(trace.Link{})
	child.SetName("SELECT sessions")
	_, grandchild := a.Start(cctx, "internal", trace.WithTimestamp(at(5)))
	grandchild.End(trace.WithTimestamp(at(6)))
	child.End(trace.WithTimestamp(at(7)))
	child.End(trace.WithTimestamp(at(8)))
	child.SetAttributes(attribute.String("after", "end"))
	child.SetName("after end")

	ts, _ := trace.ParseTraceState("vendor=value")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab}, SpanID: trace.SpanID{0xcd},
		TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	rctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	_, fromRemote := b.Start(rctx, "from a caller", trace.WithTimestamp(at(9)),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("why", "caller")}}))
	fromRemote.End(trace.WithTimestamp(at(10)))
	_, newRoot := a.Start(rctx, "new root", trace.WithNewRoot(), trace.WithTimestamp(at(11)), trace.WithSpanKind(trace.SpanKindProducer))
	newRoot.End(trace.WithTimestamp(at(12)))

	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xef}, SpanID: trace.SpanID{0x12}, Remote: true})
	uctx, dropped := a.Start(trace.ContextWithRemoteSpanContext(context.Background(), unsampled), "not sampled", trace.WithTimestamp(at(13)))
	_, droppedChild := a.Start(uctx, "nor its child", trace.WithTimestamp(at(14)))
	droppedChild.End(trace.WithTimestamp(at(15)))
	dropped.End(trace.WithTimestamp(at(16)))

	_, many := b.Start(context.Background(), "many", trace.WithTimestamp(at(17)), trace.WithSpanKind(trace.SpanKindConsumer))
	for i := range 6 {
		many.SetAttributes(attribute.Int("a"+strconv.Itoa(i%4), i), attribute.Int("b"+strconv.Itoa(i), i))
		many.AddEvent("e"+strconv.Itoa(i), trace.WithTimestamp(at(18+i)), trace.WithAttributes(attribute.Int("x", i), attribute.Int("y", i)))
		many.AddLink(trace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i + 1)}, SpanID: trace.SpanID{1}}),
			Attributes: []attribute.KeyValue{attribute.Int("x", i), attribute.Int("y", i)}})
	}
	many.End(trace.WithTimestamp(at(30)))
	root.End(trace.WithTimestamp(at(31)))
}

// exports returns what a provider exported of exercise, the scopes in
// order of their names (otlptrace's order is a map's).
func exports(t *testing.T, r *receiver) []*coltracepb.ExportTraceServiceRequest {
	t.Helper()
	reqs := r.requests(t)
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			slices.SortStableFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int { return strings.Compare(a.Scope.GetName(), b.Scope.GetName()) })
		}
	}
	return reqs
}

// Our provider exports what the SDK's, through otlptrace's own exporter,
// exports of the same spans: names, kinds, times, parents, attributes as
// the limits leave them, events, links, statuses, scopes and resource,
// with every limit at its default and with each of them low.
func TestProvider_exports_what_the_SDK_exports(t *testing.T) {
	t.Parallel()
	low := sdktrace.SpanLimits{AttributeValueLengthLimit: 5, AttributeCountLimit: 6, EventCountLimit: 2, LinkCountLimit: 1,
		AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 1}
	defaults, err := readLimits(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	none := sdktrace.SpanLimits{AttributeValueLengthLimit: -1, AttributeCountLimit: -1, EventCountLimit: -1, LinkCountLimit: -1,
		AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1}
	zero := sdktrace.SpanLimits{}
	for name, limits := range map[string]sdktrace.SpanLimits{"defaults": defaults, "low": low, "none": none, "zero": zero} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			res := resource.NewSchemaless(attribute.String("service.name", "userd"), attribute.String("service.version", "1"))
			ours, theirs := &receiver{}, &receiver{}
			oursSrv, theirsSrv := httptest.NewServer(ours), httptest.NewServer(theirs)
			defer oursSrv.Close()
			defer theirsSrv.Close()

			official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(theirsSrv.URL+"/v1/traces"))
			if err != nil {
				t.Fatal(err)
			}
			sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(official), sdktrace.WithResource(res),
				sdktrace.WithIDGenerator(&seqIDs{}), sdktrace.WithRawSpanLimits(limits),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
			exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(oursSrv.URL+"/v1/traces")), res)
			if err := exp.Start(ctx); err != nil {
				t.Fatal(err)
			}
			st := settings{sampler: sdktrace.ParentBased(sdktrace.AlwaysSample()), limits: limits, batch: testBatch}
			p := newProvider(st, exp)
			p.ids = &seqIDs{}

			exercise(sdk)
			exercise(p)
			for _, tp := range []flushingProvider{sdk, p} {
				if err := tp.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got, want := exports(t, ours), exports(t, theirs)
			if len(got) != 1 || len(want) != 1 {
				t.Fatalf("%d exports, the SDK's %d; want 1", len(got), len(want))
			}
			if n := countSpans(got[0]); n != 6 {
				t.Errorf("%d spans exported, want the 6 sampled", n)
			}
			if limits.EventCountLimit == 0 {
				// The SDK counts the events and links it drops, but sends
				// the counts only when it kept one (its snapshot copies
				// them with the queue); ours always sends them, as OTLP
				// means them.
				forSpans(got[0], func(s *tracepb.Span) {
					if s.Name == "many" && (s.DroppedEventsCount != 6 || s.DroppedLinksCount != 6) {
						t.Errorf("many: %d events and %d links dropped, want 6 and 6", s.DroppedEventsCount, s.DroppedLinksCount)
					}
					s.DroppedEventsCount, s.DroppedLinksCount = 0, 0
				})
			}
			if !proto.Equal(got[0], want[0]) {
				t.Errorf("ours   %v\n theirs %v", got[0], want[0])
			}
		})
	}
}

// testBatch is a batch that waits for a flush.
var testBatch = batchSettings{scheduleDelay: time.Hour, exportTimeout: 10 * time.Second, maxQueue: sdktrace.DefaultMaxQueueSize, maxBatch: sdktrace.DefaultMaxExportBatchSize}

func countSpans(req *coltracepb.ExportTraceServiceRequest) int {
	n := 0
	forSpans(req, func(*tracepb.Span) { n++ })
	return n
}

func forSpans(req *coltracepb.ExportTraceServiceRequest, f func(*tracepb.Span)) {
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				f(s)
			}
		}
	}
}

// testProvider is a provider exporting to srv with batch settings bs.
func testProvider(t *testing.T, srv *httptest.Server, bs batchSettings) *provider {
	t.Helper()
	exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{})), resource.NewSchemaless(attribute.String("service.name", "userd")))
	if err := exp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	limits, _ := readLimits(func(string) string { return "" })
	p := newProvider(settings{sampler: sdktrace.AlwaysSample(), limits: limits, batch: bs}, exp)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}

// recordingProvider is a provider whose batch waits for a flush,
// exporting to a receiver that keeps what it is sent.
func recordingProvider(t *testing.T) (*provider, *receiver) {
	t.Helper()
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return testProvider(t, srv, testBatch), rec
}

// A failed upload is an error of the export, and the next export starts
// afresh.
func TestExporter_upload_error(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer srv.Close()
	p := testProvider(t, srv, testBatch)
	_, sp := p.Tracer("t").Start(context.Background(), "s")
	sp.End()
	err := p.ForceFlush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "traces export") {
		t.Fatalf("export to a 400: %v", err)
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatalf("a flush with nothing left: %v", err)
	}
}

// readSpan is the span of a read, as the router makes it.
func readSpan(tr trace.Tracer) {
	_, sp := tr.Start(context.Background(), "GET /api/users/me", trace.WithSpanKind(trace.SpanKindServer))
	sp.SetAttributes(attribute.String("http.request.method", "GET"), attribute.String("http.route", "/api/users/me"),
		attribute.Int("http.response.status_code", 200), attribute.String("userd.request_id", "5f0c6c1e9a0b4c7d"))
	sp.End()
}

// BenchmarkSpan prices a read's span from its start to its export (to a
// receiver that drops it), spans ending in parallel: the SDK's, through
// otlptrace's exporter, against ours.
// go test ./adapters/tracing -run '^$' -bench Span -benchmem
func BenchmarkSpan(b *testing.B) {
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer drop.Close()
	ctx := context.Background()
	res := resource.NewSchemaless(attribute.String("service.name", "userd"))
	official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(drop.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(official), sdktrace.WithResource(res))
	exp := newExporter(otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(drop.URL+"/v1/traces")), res)
	limits, _ := readLimits(func(string) string { return "" })
	bs, _ := readBatch(func(string) string { return "" })
	ours := newProvider(settings{sampler: sdktrace.AlwaysSample(), limits: limits, batch: bs}, exp)
	for _, tc := range []struct {
		name string
		tp   flushingProvider
	}{{"sdk", sdk}, {"ours", ours}} {
		b.Run(tc.name, func(b *testing.B) {
			tr := tc.tp.Tracer("github.com/userd/userd/adapters/httpapi")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					readSpan(tr)
				}
			})
			if err := tc.tp.ForceFlush(ctx); err != nil {
				b.Fatal(err)
			}
		})
		_ = tc.tp.Shutdown(ctx)
	}
}

// A string that is not UTF-8 (a span name, an attribute's key or value,
// a status) goes out with U+FFFD in place of its bad bytes: protobuf
// strings must be UTF-8, and otlptrace's exporter fails the whole batch
// on marshalling one, where ours keeps the other spans and this one.
func TestExporter_invalid_utf8(t *testing.T) {
	t.Parallel()
	p, rec := recordingProvider(t)
	tr := p.Tracer("t")
	readSpan(tr)
	_, bad := tr.Start(context.Background(), "bad /a\xffb")
	bad.SetAttributes(attribute.String("k\xfe", "v\xfd"), attribute.Int("n", -3))
	bad.SetStatus(codes.Error, "x\xc3")
	bad.End()
	if err := p.ForceFlush(context.Background()); err != nil {
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
