package application_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// traceKey holds, in a context, the trace the work is in, as fakeTraces
// keeps it: the text itself.
type traceKey struct{}

func inTrace(ctx context.Context, tc string) context.Context {
	return context.WithValue(ctx, traceKey{}, tc)
}

func traceOf(ctx context.Context) string {
	tc, _ := ctx.Value(traceKey{}).(string)
	return tc
}

// fakeTraces stand for the tracing adapter: a trace context is the text
// in the context.
type fakeTraces struct{}

func (fakeTraces) Current(ctx context.Context) string { return traceOf(ctx) }

func (fakeTraces) Resume(ctx context.Context, tc string) context.Context { return inTrace(ctx, tc) }

func withTraces(_ *application.Config, d *application.Deps) { d.Traces = fakeTraces{} }

// webhookRecorder takes every event, and keeps the trace each was sent in.
type webhookRecorder struct {
	mu     sync.Mutex
	traces []string
}

func (w *webhookRecorder) Send(ctx context.Context, _ domain.WebhookEvent) (domain.WebhookResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.traces = append(w.traces, traceOf(ctx))
	return domain.WebhookResult{Status: 204}, nil
}

func (m *fakeMailer) Traces() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.traces)
}

const (
	signUpTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resetTrace  = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 rojo=1"
)

// With traces on, what a request queues is delivered in the request's
// trace: the sign-up's webhook and verification mail, and the mail that
// answers a request for a reset link (queued by the delivery that
// answered it, in the trace it resumed), at every retry.
func TestOutboxTraces_deliveries_resume_the_request_trace(t *testing.T) {
	t.Parallel()
	hooks := &webhookRecorder{}
	e := newEnv(t, withTraces, func(_ *application.Config, d *application.Deps) { d.Webhooks = hooks })
	in := application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"}
	if _, err := e.users.Register(inTrace(ctx, signUpTrace), nil, in); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := hooks.traces; len(got) == 0 || slices.ContainsFunc(got, func(tc string) bool { return tc != signUpTrace }) {
		t.Errorf("webhooks sent in traces %q, want each in the sign-up's %q", got, signUpTrace)
	}
	if got := e.mailer.Traces(); len(got) != 1 || got[0] != signUpTrace {
		t.Errorf("mail sent in traces %q, want the verification in the sign-up's %q", got, signUpTrace)
	}

	// The reset's first send fails: the mail waits in the outbox, its
	// retry in the request's trace still.
	fails := 1
	e.mailer.fail = func(domain.Mail) error {
		if fails > 0 {
			fails--
			return context.DeadlineExceeded
		}
		return nil
	}
	wantErr(t, e.svc.Mail.RequestPasswordReset(inTrace(ctx, resetTrace), in.Email), nil)
	if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if sent := e.deliver(t); len(sent) != 1 || sent[0].Template != domain.MailResetPassword {
		t.Fatalf("sent %+v, want the reset link", sent)
	}
	if got := e.mailer.Traces()[1:]; !slices.Equal(got, []string{resetTrace, resetTrace}) {
		t.Errorf("the reset's two sends in traces %q, want both in the request's %q", got, resetTrace)
	}
}

// With traces off (no Deps.Traces), a message keeps no trace context, and
// none is resumed, whatever the context holds.
func TestOutboxTraces_off_keep_nothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"}
	if _, err := e.users.Register(inTrace(ctx, signUpTrace), nil, in); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.store.Outbox(testBox).Claim(ctx, e.clock.Now(), time.Millisecond, 10)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("Claim = %v, %v; want the verification", msgs, err)
	}
	for _, m := range msgs {
		if m.TraceContext != "" {
			t.Errorf("message %s (%s) keeps trace context %q with traces off", m.ID, m.Kind, m.TraceContext)
		}
	}
}
