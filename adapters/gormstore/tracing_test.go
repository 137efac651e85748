package gormstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/userd/userd/domain"
)

// With a tracer provider, each statement run within a trace is a span
// with db.system and its SQL, placeholders only; a statement outside any
// trace makes none.
func TestTracing_spans_statements_within_a_trace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	db, err := Open(DriverSQLite, filepath.Join(t.TempDir(), "userd.db"), Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	users := NewUserRepository(db)
	const email = "traced.row@example.com"
	u := domain.User{ID: domain.NewUserID(time.Now()), Name: "Traced Row", Email: email, PasswordHash: "hash-secret",
		Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := users.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans outside any trace", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := users.ByID(ctx, u.ID); err != nil { // the prepared hot read
		t.Fatal(err)
	}
	if _, err := users.ByEmail(ctx, domain.Email(email)); err != nil { // through GORM
		t.Fatal(err)
	}
	parent.End()

	var statements int
	for _, sp := range exp.GetSpans() {
		if sp.Name == "request" {
			continue
		}
		statements++
		if sp.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("statement %q not under the request's span", sp.Name)
		}
		var system, text string
		for _, a := range sp.Attributes {
			switch a.Key {
			case "db.system":
				system = a.Value.AsString()
			case "db.query.text":
				text = a.Value.AsString()
			}
		}
		if system != "sqlite" || !strings.HasPrefix(sp.Name, "SELECT") || !strings.Contains(text, "?") {
			t.Errorf("statement %q: db.system %q, text %q", sp.Name, system, text)
		}
		for _, a := range sp.Attributes {
			if v := a.Value.String(); strings.Contains(v, email) || strings.Contains(v, string(u.ID)) || strings.Contains(v, "hash-secret") {
				t.Errorf("statement %q holds a value: %s = %q", sp.Name, a.Key, v)
			}
		}
	}
	if statements != 2 {
		t.Errorf("%d statement spans, want 2 (ByID, ByEmail)", statements)
	}
}
