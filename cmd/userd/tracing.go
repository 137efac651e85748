package main

import (
	"context"
	"net/http"
	"os"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/tracing"
	"github.com/userd/userd/ports"
)

// newTracing builds the tracing the standard OTEL_* variables ask for
// (adapters/tracing): off, nothing is built and the adapters are given
// no provider; on, its stop flushes the spans left, after the listeners
// and loops appended later have stopped. It makes no connection.
func newTracing(lc fx.Lifecycle) (*tracing.Tracing, error) {
	t, err := tracing.New(context.Background(), tracing.Options{Getenv: os.Getenv, Version: version})
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(t.Shutdown))
	return t, nil
}

// outgoingTransport wraps the transport of every HTTP client with which
// userd calls out: the webhooks' sender, the identity providers' client,
// and the claims hook's client (adapters/webhook's, which its wiring
// builds with this). With traces on each call is a client span carrying
// the traceparent; off, the transport is left as it is.
type outgoingTransport func(http.RoundTripper) http.RoundTripper

func newOutgoingTransport(t *tracing.Tracing) outgoingTransport { return t.Transport }

// traceDeliveries decorates the outbox's senders (`serve` only, beside
// the metrics): each mail and each webhook handed over is a span.
var traceDeliveries = fx.Decorate(
	func(t *tracing.Tracing, m ports.Mailer) ports.Mailer { return t.Mailer(m) },
	func(t *tracing.Tracing, w ports.WebhookSender) ports.WebhookSender { return t.WebhookSender(w) },
)
