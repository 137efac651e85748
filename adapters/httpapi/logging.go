package httpapi

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// LogHandler wraps next so that every record logged with a request's
// context carries that request's id, including the lines the application
// services write: one grep for an X-Request-Id finds all a request did.
// With traces on, the record also carries the trace_id and span_id of the
// span in the context, so that a log line leads to its trace and back.
func LogHandler(next slog.Handler) slog.Handler { return requestIDHandler{next} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	id := RequestID(ctx)
	// SpanContextFromContext is a lookup, no allocation: with traces off
	// there is never a valid one, and the record is passed on as it was.
	sc := trace.SpanContextFromContext(ctx)
	addID := id != "" && !hasAttr(r, "request_id")
	if addID || sc.IsValid() {
		r = r.Clone()
		if addID {
			r.AddAttrs(slog.String("request_id", id))
		}
		if sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

func hasAttr(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}
