package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// dbTracer makes a span of each statement run within a trace (a request,
// an outbox delivery), with the database's system and the statement's
// text: the SQL with its placeholders, never a parameter's value (a
// password hash, a token's hash, an email). A statement outside any trace
// (the outbox's poll, housekeeping, the session endings' catch-up) makes
// no span: each would be a trace of its own, many a second, that shows
// nothing an operator follows. Nil when traces are off: GORM is then
// given no callback and the hot reads start no span.
type dbTracer struct {
	tracer trace.Tracer
	system attribute.KeyValue
}

// tracerName is the instrumentation scope of the database spans.
const tracerName = "github.com/userd/userd/adapters/gormstore"

func newDBTracer(tp trace.TracerProvider, driver string) *dbTracer {
	if tp == nil {
		return nil
	}
	system := driver
	if driver == DriverPostgres {
		system = "postgresql" // the name OpenTelemetry's conventions give it
	}
	return &dbTracer{tracer: tp.Tracer(tracerName), system: attribute.String("db.system", system)}
}

// start opens the span of query, run outside GORM, when ctx is within a
// trace; the span is nil otherwise, and finish then does nothing.
func (t *dbTracer) start(ctx context.Context, query string) (context.Context, trace.Span) {
	if t == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, nil
	}
	return t.tracer.Start(ctx, spanName(query, ""), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(t.system, attribute.String("db.query.text", query)))
}

// finish ends span with err's outcome. No row is an answer, not a fault.
// The error's text is left out: a driver may quote a value in it (a
// duplicate key's).
func finish(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, sql.ErrNoRows) {
		span.SetStatus(codes.Error, "statement failed")
	}
	span.End()
}

// spanName is the statement's operation and, when known, its table:
// "SELECT users", as OpenTelemetry's database conventions name spans.
func spanName(query, table string) string {
	op, _, _ := strings.Cut(strings.TrimSpace(query), " ")
	op = strings.ToUpper(op)
	if op == "" {
		op = "SQL"
	}
	if table != "" {
		return op + " " + table
	}
	return op
}

// gormTracing is the GORM plugin of dbTracer: a span around each
// statement GORM runs, whatever the finisher (Create, Find, Updates,
// Delete, Row, Raw/Exec).
type gormTracing struct{ t *dbTracer }

// Keys of a statement's instance values.
const (
	spanKey   = "userd:trace_span"
	parentKey = "userd:trace_parent"
)

func (gormTracing) Name() string { return "userd:tracing" }

func (p gormTracing) Initialize(db *gorm.DB) error {
	cb := db.Callback()
	registrations := []struct {
		name          string
		before, after func(string) error
	}{
		{"create", func(n string) error { return cb.Create().Before("gorm:create").Register(n, p.before) },
			func(n string) error { return cb.Create().After("gorm:create").Register(n, p.after) }},
		{"query", func(n string) error { return cb.Query().Before("gorm:query").Register(n, p.before) },
			func(n string) error { return cb.Query().After("gorm:query").Register(n, p.after) }},
		{"update", func(n string) error { return cb.Update().Before("gorm:update").Register(n, p.before) },
			func(n string) error { return cb.Update().After("gorm:update").Register(n, p.after) }},
		{"delete", func(n string) error { return cb.Delete().Before("gorm:delete").Register(n, p.before) },
			func(n string) error { return cb.Delete().After("gorm:delete").Register(n, p.after) }},
		{"row", func(n string) error { return cb.Row().Before("gorm:row").Register(n, p.before) },
			func(n string) error { return cb.Row().After("gorm:row").Register(n, p.after) }},
		{"raw", func(n string) error { return cb.Raw().Before("gorm:raw").Register(n, p.before) },
			func(n string) error { return cb.Raw().After("gorm:raw").Register(n, p.after) }},
	}
	for _, r := range registrations {
		if err := r.before("userd:trace_before_" + r.name); err != nil {
			return err
		}
		if err := r.after("userd:trace_after_" + r.name); err != nil {
			return err
		}
	}
	return nil
}

func (p gormTracing) before(db *gorm.DB) {
	parent := db.Statement.Context
	if parent == nil || !trace.SpanContextFromContext(parent).IsValid() {
		return
	}
	// Named once the SQL is built (after).
	ctx, span := p.t.tracer.Start(parent, "SQL", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(p.t.system))
	db.Statement.Context = ctx
	db.InstanceSet(spanKey, span)
	db.InstanceSet(parentKey, parent)
}

func (p gormTracing) after(db *gorm.DB) {
	v, ok := db.InstanceGet(spanKey)
	if !ok {
		return
	}
	span, _ := v.(trace.Span)
	if span == nil {
		return
	}
	// The statement's next use on this handle is not this span's child.
	if parent, ok := db.InstanceGet(parentKey); ok {
		db.Statement.Context, _ = parent.(context.Context)
	}
	db.InstanceSet(spanKey, nil)
	// The SQL as built: placeholders only; the values are in
	// Statement.Vars, which are never read here.
	query := db.Statement.SQL.String()
	span.SetName(spanName(query, db.Statement.Table))
	span.SetAttributes(attribute.String("db.query.text", query))
	finish(span, db.Error)
}

// traceGORM installs the plugin on each distinct handle of db.
func (db *DB) traceGORM(handles ...*gorm.DB) error {
	if db.tracer == nil {
		return nil
	}
	seen := map[*gorm.DB]bool{}
	for _, h := range handles {
		if h == nil || seen[h] {
			continue
		}
		seen[h] = true
		if err := h.Use(gormTracing{db.tracer}); err != nil {
			return err
		}
	}
	return nil
}
