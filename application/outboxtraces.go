package application

import (
	"context"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// outboxTracing gives st's outbox the trace contexts, so that every
// message keeps the trace of the work that queued it; without them
// (traces off) it returns st as it is: nothing is added to a message or
// to its enqueue.
func outboxTracing(st ports.Stores, traces ports.TraceContexts) ports.Stores {
	if traces != nil {
		st.Outbox = tracedOutbox{Outbox: st.Outbox, traces: traces}
	}
	return st
}

// tracedOutbox is an outbox whose messages keep the trace context of the
// context they are queued in: the request's, or, for the mail that
// answers a request for a link, the request's again, which the delivery
// resumed (DeliveryService.handle).
type tracedOutbox struct {
	ports.Outbox
	traces ports.TraceContexts
}

// Enqueue implements ports.Outbox. A message that has a trace context
// keeps it. One longer than domain.MaxTraceContext, which the adapter
// never returns, is left out rather than fail the change the message
// belongs to.
func (o tracedOutbox) Enqueue(ctx context.Context, m domain.OutboxMessage) error {
	if m.TraceContext == "" {
		if tc := o.traces.Current(ctx); len(tc) <= domain.MaxTraceContext {
			m.TraceContext = tc
		}
	}
	return o.Outbox.Enqueue(ctx, m)
}

// resume returns ctx within the trace of the request that queued m, for
// the work of its delivery (the sender's span, the statements, the log
// lines); ctx itself when traces are off or m was queued outside any
// trace.
func (d *DeliveryService) resume(ctx context.Context, m domain.OutboxMessage) context.Context {
	if d.traces == nil || m.TraceContext == "" {
		return ctx
	}
	return d.traces.Resume(ctx, m.TraceContext)
}
