package gormstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
)

// rotationBatches runs RotateOwn's statement (rotateOwnPostgresSQL) on
// PostgreSQL in batches, as a database groups its commits: a rotation
// that arrives while rotationsRunning batches run waits for one to end,
// and then all that waited (up to rotationBatchMax) are sent together, on
// one connection, in one round trip and one transaction. Under load that
// is one commit for several refreshes instead of one each: the
// transactions and round trips were about half of PostgreSQL's CPU a
// refresh (docs/performance.md, "Speed, eleventh pass"). Alone, a
// rotation runs at once, by itself, as before.
//
// The statements of a batch run in the order of their used tokens' hashes,
// each with a snapshot of its own that sees the batch's earlier writes, so
// the outcome is the one they would have had run one after the other: of
// two rotations of one token, the second finds it used and is judged a
// repeat. A batch commits all or nothing. When it fails as a whole (a
// statement failed, a lock was waited for too long, the connection
// broke), every rotation in it runs again by itself, as it would have
// without batching; a batch whose commit was lost on its way is then
// found used, a repeat within the grace window, as any answer lost.
//
// A batch holds the lock of each family it rotated until it commits, and
// so may wait for a second family while holding the first, which a
// single rotation never does: another batch, or a revocation of all of a
// user's sessions, may hold the second and wait for the first. So a batch
// gives up on a lock after rotationBatchLockWait (lock_timeout, for its
// own transaction only): the cycle is broken in milliseconds, always on
// the batch's side, whose rotations then run by themselves; the other
// side never sees an error.
type rotationBatches struct {
	db *DB
	// slots holds a value for each batch running.
	slots chan struct{}
	mu    sync.Mutex
	// queue is the rotations not taken into a batch yet, oldest first.
	queue []*rotationCall
}

const (
	// rotationsRunning is how many batches run at once. PostgreSQL runs
	// a batch's statements one after the other on one backend, and a
	// batch waits for its commit's flush: four keep a two-core server's
	// backends busy while the rotations that arrive meanwhile queue for
	// the next batches. Measured on two cores with 32 concurrent
	// refreshes: two ran as fast, or slower; eight formed few batches
	// (docs/performance.md, "Speed, eleventh pass").
	rotationsRunning = 4
	// rotationBatchMax bounds a batch: its rotations wait for all of it.
	rotationBatchMax = 16
	// rotationBatchLockWait is how long a statement of a batch waits for
	// a lock before the batch gives up (see rotationBatches).
	rotationBatchLockWait = "100ms"
)

// rotationCall is one RotateOwn waiting for, or in, a batch.
type rotationCall struct {
	ctx     context.Context
	args    []any
	row     lookupRow
	rotated bool
	err     error
	// alone is set when the call's batch failed as a whole: the call
	// then runs by itself.
	alone bool
	// batchSize is the size of the batch the call ran in, for its span.
	batchSize int
	// taken is set, under rotationBatches.mu, once a batch holds the call.
	taken bool
	// done is closed when the call's outcome (or alone) is set.
	done chan struct{}
}

func newRotationBatches(db *DB) *rotationBatches {
	return &rotationBatches{db: db, slots: make(chan struct{}, rotationsRunning)}
}

// rotate runs rotateOwnPostgresSQL with args (rotateOwnPostgres' five)
// and scans its row into row and rotated, in a span of its own when
// traces are on: the span of the statement, in the caller's trace,
// whether it ran alone or in a batch.
func (b *rotationBatches) rotate(ctx context.Context, args []any) (row lookupRow, rotated bool, err error) {
	ctx, span := b.db.tracer.start(ctx, rotateOwnPostgresSQL)
	defer func() { finish(span, err) }()
	call := &rotationCall{ctx: ctx, args: args, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, call)
	b.mu.Unlock()
	if err := b.await(call); err != nil {
		return row, false, err
	}
	if call.alone {
		call.batchSize, call.err = 1, b.runAlone(ctx, call)
	}
	if span != nil {
		span.SetAttributes(attribute.Int("db.operation.batch.size", call.batchSize))
	}
	return call.row, call.rotated, call.err
}

// await returns once call has its outcome, running batches (its own or
// others') whenever a slot is free and call is still queued. It returns
// ctx's error when ctx ends first: a call still queued is withdrawn, one
// in a batch runs on without its caller.
func (b *rotationBatches) await(call *rotationCall) error {
	for {
		select {
		case <-call.done:
			return nil
		default:
		}
		if b.isTaken(call) {
			select {
			case <-call.done:
				return nil
			case <-call.ctx.Done():
				return call.ctx.Err()
			}
		}
		select {
		case <-call.ctx.Done():
			if b.withdraw(call) {
				return call.ctx.Err()
			}
			// Taken meanwhile: wait for the batch.
		case b.slots <- struct{}{}:
			if batch := b.take(); len(batch) > 0 {
				b.run(batch)
			}
			<-b.slots
		}
	}
}

func (b *rotationBatches) isTaken(call *rotationCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return call.taken
}

// withdraw takes call out of the queue, unless a batch holds it.
func (b *rotationBatches) withdraw(call *rotationCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if call.taken {
		return false
	}
	b.queue = slices.DeleteFunc(b.queue, func(c *rotationCall) bool { return c == call })
	return true
}

// take removes the oldest rotationBatchMax calls from the queue.
func (b *rotationBatches) take() []*rotationCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.queue), rotationBatchMax)
	batch := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	for _, c := range batch {
		c.taken = true
	}
	return batch
}

// run runs batch and closes each call's done. A batch of one runs as a
// single statement in its caller's context; a larger one in a context
// that its callers' ends do not cancel, since the others wait for it.
func (b *rotationBatches) run(batch []*rotationCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	if len(batch) == 1 {
		batch[0].batchSize, batch[0].err = 1, b.runAlone(batch[0].ctx, batch[0])
		return
	}
	// One order for every batch: two rotations of one token in two
	// batches then lock its family in the same order as the rest.
	slices.SortFunc(batch, func(x, y *rotationCall) int { return strings.Compare(x.usedHash(), y.usedHash()) })
	ctx := context.WithoutCancel(batch[0].ctx)
	err := b.db.onPgx(ctx, &b.db.rotateOwn, func(ctx context.Context, conn *pgx.Conn) error {
		var q pgx.Batch
		q.Queue(`SELECT set_config('lock_timeout', '` + rotationBatchLockWait + `', true)`)
		for _, c := range batch {
			q.Queue(rotateOwnPostgresSQL, c.args...)
		}
		results := conn.SendBatch(ctx, &q)
		_, err := results.Exec()
		for _, c := range batch {
			if err != nil {
				break
			}
			c.err = results.QueryRow().Scan(append(c.row.scanTargets(), &c.rotated)...)
			if c.err != nil && !errors.Is(c.err, pgx.ErrNoRows) {
				err = c.err
			}
		}
		// Close reads to the end of the batch: its commit.
		if closeErr := results.Close(); err == nil {
			err = closeErr
		}
		return err
	})
	for _, c := range batch {
		// Nothing of a failed batch is kept: each call runs again alone.
		c.alone, c.batchSize = err != nil, len(batch)
	}
}

// usedHash is the hash of the token call uses: its first argument.
func (c *rotationCall) usedHash() string {
	hash, _ := c.args[0].(string)
	return hash
}

// runAlone runs call's statement by itself, on a connection of its own.
func (b *rotationBatches) runAlone(ctx context.Context, call *rotationCall) error {
	call.row, call.rotated = lookupRow{}, false
	return b.db.onPgx(ctx, &b.db.rotateOwn, func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, rotateOwnPostgresSQL, call.args...).Scan(append(call.row.scanTargets(), &call.rotated)...)
	})
}
