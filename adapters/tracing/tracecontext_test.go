package tracing

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/domain"
)

// A caller's span: what a request's context holds when it queues a
// message.
func callerContext(t *testing.T, state string) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	return trace.ContextWithSpanContext(context.Background(), sc)
}

func TestTraceContexts_round_trip(t *testing.T) {
	t.Parallel()
	tr, _ := recording(t)
	tcs := tr.TraceContexts()
	if got := tcs.Current(context.Background()); got != "" {
		t.Errorf("Current(no trace) = %q, want none", got)
	}
	for _, c := range []struct{ name, state, want string }{
		{"traceparent", "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"with_tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := callerContext(t, c.state)
			tc := tcs.Current(ctx)
			if tc != c.want {
				t.Fatalf("Current = %q, want %q", tc, c.want)
			}
			want := trace.SpanContextFromContext(ctx).WithRemote(true)
			if got := trace.SpanContextFromContext(tcs.Resume(context.Background(), tc)); !got.Equal(want) {
				t.Errorf("Resume(%q) = %v, want the caller's span context, remote: %v", tc, got, want)
			}
		})
	}
	for _, tc := range []string{"", "01-garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if sc := trace.SpanContextFromContext(tcs.Resume(context.Background(), tc)); sc.IsValid() {
			t.Errorf("Resume(%q) = %v, want no trace", tc, sc)
		}
	}
}

// A tracestate over 512 characters loses its long entries first, then
// entries from the end, as W3C Trace Context says, and the whole fits
// the column.
func TestTraceContexts_bound_the_tracestate(t *testing.T) {
	t.Parallel()
	tr, _ := recording(t)
	var entries []string
	entries = append(entries, "long="+strings.Repeat("l", 200))
	// 32 entries, as many as a tracestate may hold: 200 + 31 × 21 characters.
	for i := range 31 {
		entries = append(entries, fmt.Sprintf("k%02d=%s", i, strings.Repeat("v", 16)))
	}
	tc := tr.TraceContexts().Current(callerContext(t, strings.Join(entries, ",")))
	parent, state, _ := strings.Cut(tc, " ")
	if len(parent) != 55 || len(state) > maxTraceState || len(tc) > domain.MaxTraceContext {
		t.Fatalf("Current = %q (%d characters of tracestate), want at most %d", tc, len(state), maxTraceState)
	}
	if strings.Contains(state, "long=") || !strings.HasPrefix(state, "k00=") || strings.Contains(state, "k30=") {
		t.Errorf("tracestate %q: want the long entry and the last ones dropped, the first ones kept", state)
	}
}

// A delivery within a resumed trace context is a span of the caller's
// trace, the child of the caller's span, and its request carries a
// traceparent of that trace.
func TestWebhookSender_in_the_resumed_trace(t *testing.T) {
	t.Parallel()
	tr, exp := recording(t)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Traceparent")
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	tcs := tr.TraceContexts()
	caller := trace.SpanContextFromContext(callerContext(t, ""))
	ctx := tcs.Resume(context.WithValue(context.Background(), urlKey{}, srv.URL), tcs.Current(callerContext(t, "")))
	sender := tr.WebhookSender(webhookStub{client: &http.Client{Transport: tr.Transport(nil)}})
	if _, err := sender.Send(ctx, domain.WebhookEvent{ID: "msg_1", Type: domain.WebhookUserCreated}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the request's and the delivery's", len(spans))
	}
	post, delivery := spans[0], spans[1]
	if delivery.SpanContext.TraceID() != caller.TraceID() || delivery.Parent.SpanID() != caller.SpanID() || !delivery.Parent.IsRemote() {
		t.Errorf("delivery in trace %s under %s, want the caller's trace %s under its span %s",
			delivery.SpanContext.TraceID(), delivery.Parent.SpanID(), caller.TraceID(), caller.SpanID())
	}
	want := "00-" + caller.TraceID().String() + "-" + post.SpanContext.SpanID().String() + "-01"
	if tp := <-got; tp != want {
		t.Errorf("traceparent %q, want %q", tp, want)
	}
}
