package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The variables are read as the specification gives them; a value that
// cannot be read refuses to start and names its variable.
func TestReadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env     map[string]string
		sampler string
	}{
		{nil, "ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,localParentNotSampled:AlwaysOffSampler}"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, "AlwaysOnSampler"},
		{map[string]string{"OTEL_TRACES_SAMPLER": " Always_Off "}, "AlwaysOffSampler"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"}, "TraceIDRatioBased{0.25}"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio"}, "TraceIDRatioBased{1}"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}, "ParentBased{root:TraceIDRatioBased{0.5},"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, "ParentBased{root:AlwaysOffSampler,"},
	} {
		s, err := readSettings(envOf(tc.env))
		if err != nil || !strings.HasPrefix(s.sampler.Description(), tc.sampler) {
			t.Errorf("%v: sampler %v, %v; want %s", tc.env, s.sampler, err, tc.sampler)
		}
	}

	s, err := readSettings(envOf(map[string]string{
		"OTEL_ATTRIBUTE_COUNT_LIMIT": "9", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "7",
		"OTEL_SPAN_EVENT_COUNT_LIMIT": "-1", "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT": "0",
		"OTEL_BSP_SCHEDULE_DELAY": "250", "OTEL_BSP_EXPORT_TIMEOUT": "1000", "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "512",
	}))
	if err != nil {
		t.Fatal(err)
	}
	l := s.limits
	if l.AttributeCountLimit != 9 || l.AttributeValueLengthLimit != 100 || l.EventCountLimit != -1 || l.AttributePerLinkCountLimit != 0 ||
		l.LinkCountLimit != 128 || l.AttributePerEventCountLimit != 128 {
		t.Errorf("limits %+v", l)
	}
	want := batchSettings{scheduleDelay: 250 * time.Millisecond, exportTimeout: time.Second, maxQueue: 100, maxBatch: 100}
	if s.batch != want {
		t.Errorf("batch %+v, want %+v (a batch no larger than the queue)", s.batch, want)
	}
	if s, _ := readSettings(envOf(nil)); s.batch != (batchSettings{5 * time.Second, 30 * time.Second, 2048, 512}) ||
		s.limits.AttributeCountLimit != 128 || s.limits.AttributeValueLengthLimit != -1 {
		t.Errorf("defaults %+v", s)
	}

	for name, value := range map[string]string{
		"OTEL_TRACES_SAMPLER":             "jaeger_remote",
		"OTEL_TRACES_SAMPLER_ARG":         "1.5",
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "many",
		"OTEL_BSP_MAX_QUEUE_SIZE":         "0",
		"OTEL_BSP_SCHEDULE_DELAY":         "5s",
	} {
		env := map[string]string{name: value}
		if name == "OTEL_TRACES_SAMPLER_ARG" {
			env["OTEL_TRACES_SAMPLER"] = "traceidratio"
		}
		if _, err := readSettings(envOf(env)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want refused by name", name, value, err)
		}
	}
	_, err = New(context.Background(), Options{Getenv: envOf(map[string]string{envEndpoint: "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "bogus"})})
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_SAMPLER") {
		t.Errorf("New with a bad sampler: %v", err)
	}
}

// TestSpan_size keeps the span within 512 bytes: above, Go gives each
// object a header and the collector scans it by it, which the traced
// read pays for once a request.
func TestSpan_size(t *testing.T) {
	t.Parallel()
	if n := unsafe.Sizeof(span{}); n > 512 {
		t.Errorf("a span is %d bytes, over 512", n)
	}
}

// blockingReceiver holds each export until released, telling when one
// arrives.
type blockingReceiver struct {
	receiver
	arrived chan struct{}
	release chan struct{}
}

func (r *blockingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.arrived <- struct{}{}
	<-r.release
	r.receiver.ServeHTTP(w, req)
}

// A batch's worth of ended spans is exported at once, not at the
// schedule delay; while an export is under way the queue fills, and a
// span that finds it full is dropped and counted, never waited for.
func TestBatcher_exports_full_batches_and_drops_over_the_queue(t *testing.T) {
	t.Parallel()
	rec := &blockingReceiver{arrived: make(chan struct{}, 8), release: make(chan struct{})}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	p := testProvider(t, srv, batchSettings{scheduleDelay: time.Hour, exportTimeout: 10 * time.Second, maxQueue: 2, maxBatch: 2})
	tr := p.Tracer("t")
	readSpan(tr)
	readSpan(tr) // a batch: the export starts
	select {
	case <-rec.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch waited for the schedule delay")
	}
	for range 3 {
		readSpan(tr) // two queue, the third is dropped
	}
	p.batch.mu.Lock()
	dropped := p.batch.dropped
	p.batch.mu.Unlock()
	if dropped != 1 {
		t.Errorf("%d spans dropped, want 1", dropped)
	}
	close(rec.release)
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-rec.arrived
	n := 0
	for _, req := range rec.requests(t) {
		n += countSpans(req)
	}
	if n != 4 {
		t.Errorf("%d spans exported, want 4", n)
	}
}

// Shutdown exports what waits; after it a tracer is a no-op and a span
// that ends is dropped; a second Shutdown and a flush do nothing.
func TestProvider_shutdown(t *testing.T) {
	t.Parallel()
	p, rec := recordingProvider(t)
	tr := p.Tracer("t")
	readSpan(tr)
	_, late := tr.Start(context.Background(), "ends after the shutdown")
	ctx := context.Background()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	late.End()
	if _, sp := p.Tracer("t").Start(ctx, "after"); sp.IsRecording() || sp.SpanContext().IsValid() {
		t.Error("a tracer after the shutdown records")
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if err := p.ForceFlush(ctx); err != nil {
		t.Error(err)
	}
	reqs := rec.requests(t)
	if len(reqs) != 1 || countSpans(reqs[0]) != 1 {
		t.Fatalf("exports %v, want the one span ended before the shutdown", reqs)
	}
}

// A shutdown returns at its deadline even while an export hangs on a
// collector that does not answer.
func TestProvider_shutdown_keeps_its_deadline(t *testing.T) {
	t.Parallel()
	rec := &blockingReceiver{arrived: make(chan struct{}, 8), release: make(chan struct{})}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	defer close(rec.release)
	p := testProvider(t, srv, batchSettings{scheduleDelay: time.Hour, exportTimeout: time.Minute, maxQueue: 4, maxBatch: 1})
	readSpan(p.Tracer("t"))
	<-rec.arrived // the export hangs
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("shutdown: %v, want its deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v", d)
	}
}

// A panic that passes through a deferred End is recorded on the span as
// an exception event, and goes on; a span not sampled records nothing
// but carries its context to its children.
func TestSpan_panic_and_not_sampled(t *testing.T) {
	t.Parallel()
	p, rec := recordingProvider(t)
	tr := p.Tracer("t")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic to go on", r)
			}
		}()
		_, sp := tr.Start(context.Background(), "panics")
		defer sp.End()
		panic("boom")
	}()

	p.settings.sampler = readSamplerOrFail(t, "always_off")
	ctx, off := tr.Start(context.Background(), "off")
	if off.IsRecording() || off.SpanContext().IsSampled() || !off.SpanContext().IsValid() {
		t.Errorf("an unsampled span: recording %v, %v", off.IsRecording(), off.SpanContext())
	}
	if trace.SpanContextFromContext(ctx).TraceID() != off.SpanContext().TraceID() {
		t.Error("the unsampled span's context is not carried on")
	}
	if off.TracerProvider() != trace.TracerProvider(p) {
		t.Errorf("the unsampled span's provider is %T", off.TracerProvider())
	}
	off.End()

	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests(t)
	if len(reqs) != 1 || countSpans(reqs[0]) != 1 {
		t.Fatalf("exports %v, want the panicking span alone", reqs)
	}
	var got *tracepb.Span
	forSpans(reqs[0], func(s *tracepb.Span) { got = s })
	if len(got.Events) != 1 || got.Events[0].Name != "exception" {
		t.Fatalf("events %v", got.Events)
	}
	attrs := map[string]string{}
	for _, kv := range got.Events[0].Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["exception.type"] != "string" || attrs["exception.message"] != "boom" {
		t.Errorf("exception %v", attrs)
	}
}

func readSamplerOrFail(t *testing.T, name string) sdktrace.Sampler {
	t.Helper()
	s, err := readSampler(envOf(map[string]string{"OTEL_TRACES_SAMPLER": name}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// truncate cuts to characters, not bytes, and leaves out a byte that is
// not UTF-8, as the SDK does.
func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     string
		limit int
		want  string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "hé"},
		{"héllo", 0, ""},
		{"a\xffbcdef", 3, "abc"},
		{"a\xff", 2, "a\xff"}, // no longer than the limit in bytes: kept as is
		{"\uFFFDabc", 2, "\uFFFDa"},
		{"ab\xfe\xffcd", 3, "abc"},
	} {
		if got := truncate(tc.limit, tc.s); got != tc.want {
			t.Errorf("truncate(%d, %q) = %q, want %q", tc.limit, tc.s, got, tc.want)
		}
	}
}
