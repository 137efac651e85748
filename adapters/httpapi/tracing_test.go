package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/test/kit"
)

func withTracerProvider(tp trace.TracerProvider) serverOption {
	return func(c *serverConfig) { c.tracer = tp }
}

// readAllocs is the allocations of one authenticated read (GET
// /api/users/me) through s's handler.
func readAllocs(t *testing.T, s *testServer) float64 {
	t.Helper()
	_, tok := s.customer("Reader", "reader@example.com")
	read := func() {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/users/me", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("read: %d %s", rec.Code, rec.Body)
		}
	}
	read() // the verified-token cache and the pools warmed
	// AllocsPerRun counts the whole process's allocations: the least of
	// three is the read's, without what a goroutine of another test
	// allocated meanwhile.
	least := testing.AllocsPerRun(200, read)
	for range 2 {
		least = min(least, testing.AllocsPerRun(200, read))
	}
	return least
}

// Traces off (no provider: what cmd passes unless the OTEL_* variables
// turn them on) cost a request nothing: it allocates no more than with
// a provider that records nothing at all, which still puts a span in
// every context (one allocation since the span is begun in the context
// requestID makes anyway), and less than with the SDK recording every
// span.
func TestTraces_off_allocate_nothing_per_request(t *testing.T) {
	off := readAllocs(t, newTestServer(t))
	noopAllocs := readAllocs(t, newTestServer(t, withTracerProvider(noop.NewTracerProvider())))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	on := readAllocs(t, newTestServer(t, withTracerProvider(sdk)))
	t.Logf("allocations per authenticated read: off %.0f, noop provider %.0f, sdk sampling all %.0f", off, noopAllocs, on)
	if off > noopAllocs || noopAllocs >= on {
		t.Errorf("allocations off %.0f, noop %.0f, on %.0f: want off <= noop < on", off, noopAllocs, on)
	}
}

// A request's span is named by the method and the route template, is the
// child of the caller's traceparent, and records the status; the path
// with its id and the query string are nowhere in it.
func TestTraces_span_of_a_request(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s := newTestServer(t, withTracerProvider(sdk))
	u, tok := s.customer("Traced", "traced@example.com")
	exp.Reset()
	const traceID, parent = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	s.do("GET", "/api/users/"+u.ID+"?fields=x", nil, withToken(tok.AccessToken),
		withHeader("Traceparent", "00-"+traceID+"-"+parent+"-01"))
	spans := exp.GetSpans()
	var found bool
	for _, sp := range spans {
		if sp.SpanKind != trace.SpanKindServer {
			continue
		}
		found = true
		if sp.Name != "GET /api/users/:id" || sp.SpanContext.TraceID().String() != traceID || sp.Parent.SpanID().String() != parent {
			t.Errorf("span %q in trace %s under %s", sp.Name, sp.SpanContext.TraceID(), sp.Parent.SpanID())
		}
		for _, a := range sp.Attributes {
			if v := a.Value.String(); strings.Contains(v, u.ID) || strings.Contains(v, "fields") {
				t.Errorf("attribute %s = %q holds the path or the query", a.Key, v)
			}
		}
	}
	if !found {
		t.Fatalf("no server span among %d", len(spans))
	}
}

// BenchmarkRead_traces prices the traces on the authenticated read (GET
// /api/users/me through the real handler over the memory store): off (no
// provider), and on with every request sampled, batched and exported by
// the real OTLP/HTTP exporter to a local receiver that drops the exports.
// go test ./adapters/httpapi -run '^$' -bench Read_traces -count 5
func BenchmarkRead_traces(b *testing.B) {
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer drop.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(drop.URL+"/v1/traces"))
	if err != nil {
		b.Fatal(err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"off", nil}, {"on", sdk}} {
		b.Run(tc.name, func(b *testing.B) {
			app := kit.NewApp(b, kit.AppParts{})
			h := httpapi.New(app.Services(b), httpapi.Options{Clock: app.Clock, KeySet: app.Issuer, TracerProvider: tc.tp})
			srv := httptest.NewServer(h)
			defer srv.Close()
			kit.Register(b, srv.URL, "Reader", "reader@example.com", custPassword)
			auth := "Bearer " + kit.Login(b, srv.URL, "reader@example.com", custPassword).AccessToken
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/api/users/me", nil)
				req.Header.Set("Authorization", auth)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("read: %d", rec.Code)
				}
			}
		})
	}
}
