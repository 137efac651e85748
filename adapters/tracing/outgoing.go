package tracing

import (
	"context"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Transport wraps next (nil: http.DefaultTransport) so that each request
// sent through it is a client span, a child of the span of its context,
// and carries that span's traceparent (and the context's baggage): the
// receiver of a webhook, the claims hook or an identity provider can
// join the trace. Off, it returns next itself: nothing is added.
//
// The span records the method, the server's host and port and the
// answer's status; never the URL's path or query, nor a header, which
// may carry a token (a webhook URL's ?token=, an Authorization).
func (t *Tracing) Transport(next http.RoundTripper) http.RoundTripper {
	if !t.On() {
		return next
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{next: next, tracer: t.tracer, propagator: t.propagator}
}

type transport struct {
	next       http.RoundTripper
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

func (rt *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", req.Method),
		attribute.String("server.address", req.URL.Hostname()),
	}
	if port := req.URL.Port(); port != "" {
		if n, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", n))
		}
	}
	ctx, span := rt.tracer.Start(req.Context(), req.Method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	// A RoundTripper must not change the caller's request: the headers
	// are the clone's.
	req = req.Clone(ctx)
	rt.propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	res, err := rt.next.RoundTrip(req)
	if err != nil {
		// Not the error's text: a dial error names addresses, which is
		// what server.address says already, and nothing else is needed.
		span.SetStatus(codes.Error, "no answer")
		span.End()
		return res, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
	if res.StatusCode >= 500 {
		span.SetStatus(codes.Error, "")
	}
	// The span ends with the answer's headers: the body is the caller's
	// to read, at its pace.
	span.End()
	return res, nil
}

// Mailer wraps next so that each mail the outbox hands over is a span,
// "outbox deliver mail", with the template and language but never the
// address, the name or the template's data (links, codes). Off, it
// returns next.
func (t *Tracing) Mailer(next ports.Mailer) ports.Mailer {
	if !t.On() || next == nil {
		return next
	}
	return tracedMailer{next: next, tracer: t.tracer}
}

type tracedMailer struct {
	next   ports.Mailer
	tracer trace.Tracer
}

func (m tracedMailer) Send(ctx context.Context, mail domain.Mail) error {
	ctx, span := startDelivery(ctx, m.tracer, "mail",
		attribute.String("userd.mail.template", string(mail.Template)), attribute.String("userd.mail.lang", mail.Lang))
	defer span.End()
	err := m.next.Send(ctx, mail)
	endWith(span, err)
	return err
}

// startDelivery starts the span of one delivery of what ("mail",
// "webhook") by the outbox: a child of the span of ctx, which the
// delivery resumed from the message (TraceContexts) when the request
// that queued it was traced, and a new trace otherwise.
func startDelivery(ctx context.Context, tracer trace.Tracer, what string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer.Start(ctx, "outbox deliver "+what, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// WebhookSender wraps next so that each event the outbox posts is a span,
// "outbox deliver webhook", with the event's type and id (the
// webhook-id header) and the receiver's status, never the payload; the
// request itself is the span's child when the sender's client goes
// through Transport. Off, or without a sender, it returns next.
func (t *Tracing) WebhookSender(next ports.WebhookSender) ports.WebhookSender {
	if !t.On() || next == nil {
		return next
	}
	return tracedWebhooks{next: next, tracer: t.tracer}
}

type tracedWebhooks struct {
	next   ports.WebhookSender
	tracer trace.Tracer
}

func (w tracedWebhooks) Send(ctx context.Context, e domain.WebhookEvent) (domain.WebhookResult, error) {
	ctx, span := startDelivery(ctx, w.tracer, "webhook",
		attribute.String("userd.webhook.type", e.Type), attribute.String("userd.webhook.id", e.ID))
	defer span.End()
	res, err := w.next.Send(ctx, e)
	if res.Status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", res.Status))
	}
	endWith(span, err)
	return res, err
}

// endWith marks span failed when err is not nil. The error's text is left
// out: a mail server's refusal may quote the address.
func endWith(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "delivery failed")
	}
}
