package tracing

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// span is a recording span (provider.go). Its methods follow the SDK's
// recordingSpan: the same limits, the same last-wins attributes, the same
// status precedence, an exception event for a panic that passes through
// a deferred End. Once ended nothing changes it, so the batch and the
// exporter read it without its lock.
type span struct {
	embedded.Span

	tracer *tracer
	sc     trace.SpanContext
	// parentID and parentRemote (below) are what OTLP carries of the
	// parent.
	parentID trace.SpanID
	kind     trace.SpanKind
	start    time.Time

	mu sync.Mutex
	// endNano is the end, in nanoseconds since the Unix epoch.
	endNano    int64
	name       string
	statusDesc string
	// attrs starts over inline: a span of userd's holds four attributes
	// at most but for an outgoing call's five, and needs no allocation
	// of its own for them.
	attrs        []attribute.KeyValue
	inline       [4]attribute.KeyValue
	droppedAttrs int
	// more holds the events and links, which userd's spans never have.
	more *spanExtras

	// The small fields last, packed in one word: the span stays within
	// 512 bytes, the largest object Go allocates without a header
	// (TestSpan_size).
	statusCode   codes.Code
	parentRemote bool
	ended        bool
	// dirty: attrs may hold a key twice; End keeps the last value.
	dirty bool
}

// spanExtras are a span's events and links, made at the first of them.
type spanExtras struct {
	events        []sdktrace.Event
	droppedEvents int
	links         []sdktrace.Link
	droppedLinks  int
}

// extras returns s.more, made if need be.
func (s *span) extras() *spanExtras {
	if s.more == nil {
		s.more = &spanExtras{}
	}
	return s.more
}

var _ trace.Span = (*span)(nil)

// End ends the span at the time given or now, and hands it to the batch
// if it is sampled. A second End does nothing. Called by a deferred
// function while a panic unwinds, it records the panic as an exception
// event and lets it go on.
func (s *span) End(opts ...trace.SpanEndOption) {
	// The monotonic clock since the start: a wall clock stepped back
	// cannot end a span before it began.
	et := s.start.Add(time.Since(s.start))
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	cfg := trace.NewSpanEndConfig(opts...)
	if recovered := recover(); recovered != nil {
		defer panic(recovered)
		attrs := []attribute.KeyValue{
			attribute.String("exception.type", typeName(recovered)),
			attribute.String("exception.message", fmt.Sprint(recovered)),
		}
		if cfg.StackTrace() {
			attrs = append(attrs, attribute.String("exception.stacktrace", stackTrace()))
		}
		s.addEvent("exception", trace.WithAttributes(attrs...))
	}
	if ts := cfg.Timestamp(); !ts.IsZero() {
		et = ts
	}
	s.endNano, s.ended = et.UnixNano(), true
	if s.dirty {
		s.attrs = dedupe(s.attrs)
	}
	s.mu.Unlock()
	if s.sc.IsSampled() {
		s.tracer.provider.batch.enqueue(s)
	}
}

// AddEvent records an event on the span.
func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.addEvent(name, opts...)
	}
}

// addEvent adds an event, its attributes cut to the limit, the oldest
// event dropped when the span holds as many as allowed.
func (s *span) addEvent(name string, opts ...trace.EventOption) {
	c := trace.NewEventConfig(opts...)
	e := sdktrace.Event{Name: name, Time: c.Timestamp()}
	e.Attributes, e.DroppedAttributeCount = limitAttrs(c.Attributes(), s.tracer.provider.settings.limits.AttributePerEventCountLimit)
	x := s.extras()
	x.events = addEvicting(x.events, e, s.tracer.provider.settings.limits.EventCountLimit, &x.droppedEvents)
}

// AddLink records a link to another span.
func (s *span) AddLink(link trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.addLink(&s.tracer.provider.settings.limits, link)
	}
}

func (s *span) addLink(limits *sdktrace.SpanLimits, link trace.Link) {
	if !link.SpanContext.IsValid() && len(link.Attributes) == 0 && link.SpanContext.TraceState().Len() == 0 {
		return
	}
	l := sdktrace.Link{SpanContext: link.SpanContext}
	l.Attributes, l.DroppedAttributeCount = limitAttrs(link.Attributes, limits.AttributePerLinkCountLimit)
	x := s.extras()
	x.links = addEvicting(x.links, l, limits.LinkCountLimit, &x.droppedLinks)
}

// IsRecording reports whether the span has not ended.
func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// RecordError records err as an exception event: its type and its text.
// userd's own spans never call it (an error's text may quote a value);
// it is here for the API's sake.
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	opts = append(opts, trace.WithAttributes(
		attribute.String("exception.type", typeName(err)),
		attribute.String("exception.message", err.Error()),
	))
	if c := trace.NewEventConfig(opts...); c.StackTrace() {
		opts = append(opts, trace.WithAttributes(attribute.String("exception.stacktrace", stackTrace())))
	}
	s.AddEvent("exception", opts...)
}

// SpanContext returns the span's context.
func (s *span) SpanContext() trace.SpanContext { return s.sc }

// SetStatus sets the status: Ok is final, Error beats Unset, and only an
// Error keeps its description.
func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.statusCode > code {
		return
	}
	s.statusCode, s.statusDesc = code, ""
	if code == codes.Error {
		s.statusDesc = description
	}
}

// SetName renames the span.
func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.name = name
	}
}

// SetAttributes sets attributes; a key set again keeps its last value.
func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	if len(kv) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.setAttributes(&s.tracer.provider.settings.limits, kv)
	}
}

// TracerProvider returns the span's provider.
func (s *span) TracerProvider() trace.TracerProvider { return s.tracer.provider }

// setAttributes adds kv as the SDK does: an invalid key is dropped and
// counted; under the count limit they are appended and deduplicated at
// the end; over it, the span's are deduplicated first, a key already
// there takes its new value, and a new key past the limit is dropped and
// counted. Values are cut to the length limit.
func (s *span) setAttributes(limits *sdktrace.SpanLimits, kv []attribute.KeyValue) {
	if len(kv) == 0 {
		return
	}
	limit, length := limits.AttributeCountLimit, limits.AttributeValueLengthLimit
	if limit == 0 {
		s.droppedAttrs += len(kv)
		return
	}
	if limit < 0 || len(s.attrs)+len(kv) <= limit {
		for _, a := range kv {
			if !a.Valid() {
				s.droppedAttrs++
				continue
			}
			s.attrs = append(s.attrs, truncateAttr(length, a))
			s.dirty = s.dirty || len(s.attrs) > 1
		}
		return
	}
	s.attrs = dedupe(s.attrs)
	s.dirty = false
	for _, a := range kv {
		switch i := indexOfKey(s.attrs, a.Key); {
		case !a.Valid():
			s.droppedAttrs++
		case i >= 0:
			s.attrs[i] = truncateAttr(length, a)
		case len(s.attrs) >= limit:
			s.droppedAttrs++
		default:
			s.attrs = append(s.attrs, truncateAttr(length, a))
		}
	}
}

// dedupe keeps one attribute of each key, where the key first was, with
// the last value it was given.
func dedupe(attrs []attribute.KeyValue) []attribute.KeyValue {
	unique := attrs[:0]
	for _, a := range attrs {
		if i := indexOfKey(unique, a.Key); i >= 0 {
			unique[i] = a
		} else {
			unique = append(unique, a)
		}
	}
	clear(attrs[len(unique):])
	return unique
}

// indexOfKey is where key is in attrs, -1 if not: a span holds a handful
// of attributes, for which a scan is cheaper than a map.
func indexOfKey(attrs []attribute.KeyValue, key attribute.Key) int {
	for i := range attrs {
		if attrs[i].Key == key {
			return i
		}
	}
	return -1
}

// limitAttrs returns an event's or a link's attributes cut to the first
// limit, and how many were dropped. As the SDK, it neither deduplicates
// them nor drops an invalid key: the limits on a span's own attributes
// are the ones the specification details.
func limitAttrs(kv []attribute.KeyValue, limit int) ([]attribute.KeyValue, int) {
	switch {
	case len(kv) == 0:
		return nil, 0
	case limit == 0:
		return nil, len(kv)
	case limit > 0 && len(kv) > limit:
		return kv[:limit], len(kv) - limit
	}
	return kv, 0
}

// addEvicting appends v to q, which holds limit items at most (a
// negative limit: no limit): at the limit the oldest is dropped and
// counted.
func addEvicting[T any](q []T, v T, limit int, dropped *int) []T {
	switch {
	case limit == 0:
		*dropped++
		return q
	case limit > 0 && len(q) >= limit:
		copy(q, q[1:])
		q = q[:len(q)-1]
		*dropped++
	}
	return append(q, v)
}

// truncateAttr cuts a string value (or each of a string slice's) to limit
// characters, and a byte slice to limit bytes, as the SDK does; a
// negative limit cuts nothing. userd's spans hold strings and integers.
func truncateAttr(limit int, a attribute.KeyValue) attribute.KeyValue {
	if limit < 0 {
		return a
	}
	switch a.Value.Type() {
	case attribute.STRING:
		if v := a.Value.AsString(); len(v) > limit {
			a.Value = attribute.StringValue(truncate(limit, v))
		}
	case attribute.STRINGSLICE:
		vs := a.Value.AsStringSlice()
		for i, v := range vs {
			vs[i] = truncate(limit, v)
		}
		a.Value = attribute.StringSliceValue(vs)
	case attribute.BYTESLICE:
		if v := a.Value.AsByteSlice(); len(v) > limit {
			a.Value = attribute.ByteSliceValue(v[:limit])
		}
	}
	return a
}

// truncate returns the first limit characters of s. A byte that is not
// UTF-8 is left out and not counted; U+FFFD written as such counts.
func truncate(limit int, s string) string {
	if len(s) <= limit {
		return s
	}
	count := 0
	for i := 0; i < len(s); {
		if count == limit {
			return s[:i]
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return truncateInvalid(limit, s)
		}
		i += size
		count++
	}
	return s
}

// truncateInvalid is truncate for a string that is not UTF-8.
func truncateInvalid(limit int, s string) string {
	var b strings.Builder
	count := 0
	for i := 0; i < len(s) && count < limit; {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
		count++
	}
	return b.String()
}

// typeName is the type of a recovered value or an error, for
// exception.type: the package path and name of a named type
// ("github.com/x/y.MyErr"), as the SDK gives it, else the type as Go
// writes it ("*errors.errorString", "string", where the SDK would write
// ".string").
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "<nil>"
	}
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// stackTrace is the calling goroutine's stack, up to 2 KiB as the SDK
// records it.
func stackTrace() string {
	buf := make([]byte, 2048)
	return string(buf[:runtime.Stack(buf, false)])
}
