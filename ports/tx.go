package ports

import "context"

// Transactor runs several store operations as one: every store method
// called with the context fn receives joins the transaction, so that a
// change and the messages it causes (the outbox) are written together or
// not at all. Store methods called with a context outside WithinTx run on
// their own, as before.
type Transactor interface {
	// WithinTx runs fn in a transaction and commits it when fn returns nil;
	// it rolls back and returns fn's error unchanged otherwise. A call
	// inside a transaction joins it. It may return an error wrapping
	// domain.ErrUnavailable when the store cannot serve for now (then fn
	// may not have run).
	WithinTx(ctx context.Context, fn func(ctx context.Context) error) error
}
