// Package tracing exports userd's OpenTelemetry traces by OTLP over HTTP,
// when the standard OTEL_* variables ask for it, and gives the other
// adapters what they trace with: the tracer provider, the propagator of
// the W3C trace context and baggage, a RoundTripper for outgoing HTTP and
// decorators of the outbox's senders. The spans are userd's own behind the
// OpenTelemetry API (provider.go). Off (no endpoint set,
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none), it builds
// nothing: the adapters are handed no provider and install nothing, so a
// request costs what it cost before traces existed.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName names the instrumentation scope of every span userd makes.
const ScopeName = "github.com/userd/userd"

// The standard variables that decide whether traces are on. The sampler,
// the batch and the span limits (OTEL_TRACES_SAMPLER and _ARG, OTEL_BSP_*,
// OTEL_SPAN_*_LIMIT) are read in settings.go; the others
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE) by the SDK's resource and the
// exporter's client themselves, as their specification says.
const (
	envEndpoint        = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint  = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol        = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol  = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envSDKDisabled     = "OTEL_SDK_DISABLED"
	envTracesExporter  = "OTEL_TRACES_EXPORTER"
	defaultServiceName = "userd"
)

// Options configure New.
type Options struct {
	// Getenv reads the OTEL_* variables that decide whether traces are
	// on, and the sampler, batch and limits (cmd passes os.Getenv); nil
	// finds none: traces off.
	Getenv func(string) string
	// Version is the service.version of the spans' resource.
	Version string
}

// Tracing is userd's tracing: on, with a provider that exports, or off.
// The zero value and nil are off. It is safe for concurrent use.
type Tracing struct {
	provider   flushingProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// flushingProvider is a provider whose spans are exported in batches:
// userd's own (provider.go), or in a test the SDK's.
type flushingProvider interface {
	trace.TracerProvider
	ForceFlush(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Propagator is the W3C trace context and baggage: a caller's
// traceparent is honoured, and every outgoing request carries one.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Enabled reads the variables that turn traces on: an OTLP endpoint set,
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none. It refuses
// an exporter or protocol userd does not speak rather than export nothing
// in silence.
func Enabled(getenv func(string) string) (bool, error) {
	if getenv == nil {
		return false, nil
	}
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv(envTracesExporter)); exp {
	case "", "otlp":
	case "none":
		return false, nil
	default:
		return false, fmt.Errorf("%s %q: userd exports traces by otlp (over HTTP) or none", envTracesExporter, exp)
	}
	for _, name := range []string{envTracesProtocol, envProtocol} {
		switch p := strings.TrimSpace(getenv(name)); p {
		case "":
			continue
		case "http/protobuf":
		default:
			return false, fmt.Errorf("%s %q: userd exports traces by OTLP over HTTP only, as http/protobuf", name, p)
		}
		break
	}
	return getenv(envTracesEndpoint) != "" || getenv(envEndpoint) != "", nil
}

// New returns the tracing the variables ask for: off (a Tracing whose
// TracerProvider is nil) unless Enabled; on, a provider whose spans are
// batched to the OTLP/HTTP exporter. It makes no connection: the exporter
// connects when it first exports. Shutdown flushes what is left.
func New(ctx context.Context, opts Options) (*Tracing, error) {
	on, err := Enabled(opts.Getenv)
	if err != nil || !on {
		return &Tracing{}, err
	}
	s, err := readSettings(opts.Getenv)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		// service.name defaults to userd; OTEL_SERVICE_NAME and
		// OTEL_RESOURCE_ATTRIBUTES, read after it, win.
		resource.WithAttributes(attribute.String("service.name", defaultServiceName),
			attribute.String("service.version", opts.Version)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// otlptracehttp's client, which reads OTEL_EXPORTER_OTLP_*.
	exporter := newExporter(otlptracehttp.NewClient(), res)
	if err := exporter.Start(ctx); err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	provider := newProvider(s, exporter)
	return &Tracing{provider: provider, tracer: provider.Tracer(ScopeName), propagator: Propagator()}, nil
}

// On reports whether spans are recorded and exported.
func (t *Tracing) On() bool { return t != nil && t.provider != nil }

// TracerProvider is the provider the adapters trace with, nil when off:
// an adapter given nil installs nothing.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.On() {
		return nil
	}
	return t.provider
}

// ForceFlush exports the spans that ended and wait in the batch.
func (t *Tracing) ForceFlush(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Shutdown exports what is left and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.On() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
