package tracing

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
)

// batcher holds the ended spans until they are exported, as the SDK's
// batch span processor does (OTEL_BSP_*): every schedule delay, or as
// soon as a batch's worth waits, its goroutine takes all that waits and
// exports it in batches. A span that finds the queue full is dropped,
// never a request slowed. The queue is a slice under a mutex, swapped
// with a spare at each export: a span costs an append, and the goroutine
// wakes once a batch, not once a span.
type batcher struct {
	settings batchSettings
	exp      *exporter

	mu    sync.Mutex
	queue []*span
	// dropped counts the spans that found the queue full, as the SDK's
	// processor does (it reports them only in its debug log).
	dropped int
	stopped bool

	wake chan struct{} // a batch's worth waits
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// exporting is held by the export of what waits (the goroutine's, a
	// flush's, the shutdown's): one at a time, over spare.
	exporting sync.Mutex
	spare     []*span
}

func newBatcher(s batchSettings, exp *exporter) *batcher {
	b := &batcher{settings: s, exp: exp, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.run()
	return b
}

// enqueue queues an ended, sampled span.
func (b *batcher) enqueue(s *span) {
	b.mu.Lock()
	if b.stopped || len(b.queue) >= b.settings.maxQueue {
		b.dropped++
		b.mu.Unlock()
		return
	}
	b.queue = append(b.queue, s)
	full := len(b.queue) == b.settings.maxBatch
	b.mu.Unlock()
	if full {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(b.settings.scheduleDelay)
	defer timer.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-b.wake:
		case <-timer.C:
		}
		_ = b.export(context.Background()) // reported by export
		timer.Reset(b.settings.scheduleDelay)
	}
}

// export exports every span that waits, in batches; an export that fails
// is reported to OpenTelemetry's error handler (stderr), as the SDK's
// are, and its spans are not tried again.
func (b *batcher) export(ctx context.Context) error {
	b.exporting.Lock()
	defer b.exporting.Unlock()
	b.mu.Lock()
	spans := b.queue
	b.queue = b.spare[:0]
	b.mu.Unlock()
	var errs []error
	for batch := range slices.Chunk(spans, b.settings.maxBatch) {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		ectx, cancel := context.WithTimeout(ctx, b.settings.exportTimeout)
		errs = append(errs, b.exp.export(ectx, batch))
		cancel()
	}
	clear(spans)
	b.spare = spans[:0]
	err := errors.Join(errs...)
	if err != nil {
		otel.Handle(err)
	}
	return err
}

// flush exports what waits now.
func (b *batcher) flush(ctx context.Context) error { return b.export(ctx) }

// shutdown stops the goroutine, exports what is left and stops the
// exporter, within ctx: an export under way when it is called may hold
// the goroutine up to the export timeout, and a stop does not wait past
// its own deadline for it. Spans that end after it are dropped; a second
// call does nothing.
func (b *batcher) shutdown(ctx context.Context) error {
	var err error
	b.once.Do(func() {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		close(b.stop)
		select {
		case <-b.done:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		err = errors.Join(b.export(ctx), b.exp.Shutdown(ctx))
	})
	return err
}
