package tracing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/userd/userd/domain"
)

func TestEnabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		refused bool
	}{
		{"nothing_set", nil, false, false},
		{"endpoint", map[string]string{envEndpoint: "http://collector:4318"}, true, false},
		{"traces_endpoint", map[string]string{envTracesEndpoint: "http://collector:4318/v1/traces"}, true, false},
		{"sdk_disabled", map[string]string{envEndpoint: "http://c:4318", envSDKDisabled: "TRUE"}, false, false},
		{"sdk_not_disabled", map[string]string{envEndpoint: "http://c:4318", envSDKDisabled: "false"}, true, false},
		{"exporter_none", map[string]string{envEndpoint: "http://c:4318", envTracesExporter: "none"}, false, false},
		{"exporter_otlp", map[string]string{envEndpoint: "http://c:4318", envTracesExporter: "otlp"}, true, false},
		{"exporter_zipkin", map[string]string{envEndpoint: "http://c:4318", envTracesExporter: "zipkin"}, false, true},
		{"protocol_http", map[string]string{envEndpoint: "http://c:4318", envProtocol: "http/protobuf"}, true, false},
		{"protocol_grpc", map[string]string{envEndpoint: "http://c:4318", envProtocol: "grpc"}, false, true},
		{"traces_protocol_wins", map[string]string{envEndpoint: "http://c:4318", envProtocol: "grpc", envTracesProtocol: "http/protobuf"}, true, false},
		{"exporter_none_without_endpoint", map[string]string{envTracesExporter: "none"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			on, err := Enabled(func(k string) string { return tc.env[k] })
			if on != tc.on || (err != nil) != tc.refused {
				t.Errorf("Enabled = %v, %v; want %v, refused %v", on, err, tc.on, tc.refused)
			}
		})
	}
}

// Off, New builds nothing, and every wrapper hands back what it wraps.
func TestOff_wraps_nothing(t *testing.T) {
	t.Parallel()
	tr, err := New(context.Background(), Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if tr.On() || tr.TracerProvider() != nil {
		t.Fatal("on without an endpoint")
	}
	next := http.DefaultTransport
	if tr.Transport(next) != next {
		t.Error("Transport wraps while off")
	}
	if tr.TraceContexts() != nil {
		t.Error("trace contexts kept while off")
	}
	if tr.WebhookSender(nil) != nil || tr.Mailer(nil) != nil {
		t.Error("a nil sender became one")
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// recording is a Tracing on, exporting to memory.
func recording(t *testing.T) (*Tracing, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	p := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return &Tracing{provider: p, tracer: p.Tracer(ScopeName), propagator: Propagator()}, exp
}

type webhookStub struct{ client *http.Client }

func (w webhookStub) Send(ctx context.Context, _ domain.WebhookEvent) (domain.WebhookResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srvURL(ctx), nil)
	if err != nil {
		return domain.WebhookResult{}, err
	}
	res, err := w.client.Do(req)
	if err != nil {
		return domain.WebhookResult{}, err
	}
	_ = res.Body.Close()
	return domain.WebhookResult{Status: res.StatusCode}, nil
}

type urlKey struct{}

func srvURL(ctx context.Context) string { return ctx.Value(urlKey{}).(string) }

// A delivery is a span; its request is the child span, and carries that
// child's traceparent; the URL's query is in no attribute.
func TestWebhookSender_and_Transport(t *testing.T) {
	t.Parallel()
	tr, exp := recording(t)
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Traceparent")
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	sender := tr.WebhookSender(webhookStub{client: &http.Client{Transport: tr.Transport(nil)}})
	ctx := context.WithValue(context.Background(), urlKey{}, srv.URL+"/hook?token=query-secret")
	res, err := sender.Send(ctx, domain.WebhookEvent{ID: "msg_1", Type: domain.WebhookUserCreated})
	if err != nil || res.Status != http.StatusAccepted {
		t.Fatalf("send: %v %v", res, err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the request's and the delivery's", len(spans))
	}
	post, delivery := spans[0], spans[1]
	if delivery.Name != "outbox deliver webhook" || post.Name != "POST" || post.Parent.SpanID() != delivery.SpanContext.SpanID() {
		t.Fatalf("spans %q under %s, %q (%s)", post.Name, post.Parent.SpanID(), delivery.Name, delivery.SpanContext.SpanID())
	}
	want := "00-" + post.SpanContext.TraceID().String() + "-" + post.SpanContext.SpanID().String() + "-01"
	if tp := <-got; tp != want {
		t.Errorf("traceparent %q, want %q", tp, want)
	}
	for _, sp := range spans {
		for _, a := range sp.Attributes {
			if v := a.Value.String(); v == srv.URL || containsAny(v, "token", "query-secret", "/hook") {
				t.Errorf("%s: %s = %q", sp.Name, a.Key, v)
			}
		}
	}
	if !hasAttr(post.Attributes, attribute.Int("http.response.status_code", http.StatusAccepted)) {
		t.Errorf("no status on the request's span: %v", post.Attributes)
	}
}

type mailStub struct{}

func (mailStub) Send(context.Context, domain.Mail) error { return nil }

// A mail's span names its template, never the address or its data.
func TestMailer_span(t *testing.T) {
	t.Parallel()
	tr, exp := recording(t)
	m := domain.Mail{To: "someone@example.com", Name: "Some One", Template: domain.MailVerifyEmail, Lang: "en",
		Data: map[string]string{"Link": "https://x/verify?token=secret-link"}}
	if err := tr.Mailer(mailStub{}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "outbox deliver mail" {
		t.Fatalf("spans %v", spans)
	}
	for _, a := range spans[0].Attributes {
		if containsAny(a.Value.String(), "someone", "Some One", "secret-link") {
			t.Errorf("%s = %q", a.Key, a.Value.String())
		}
	}
	if !hasAttr(spans[0].Attributes, attribute.String("userd.mail.template", string(domain.MailVerifyEmail))) {
		t.Errorf("no template: %v", spans[0].Attributes)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if sub != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hasAttr(attrs []attribute.KeyValue, want attribute.KeyValue) bool {
	for _, a := range attrs {
		if a == want {
			return true
		}
	}
	return false
}
