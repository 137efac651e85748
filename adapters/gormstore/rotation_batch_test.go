package gormstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/userd/userd/domain"
)

// batchFixture is a PostgreSQL store whose rotation spans are recorded,
// with one user to hold sessions.
type batchFixture struct {
	db    *DB
	store *RefreshTokenStore
	user  domain.User
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
}

func newBatchFixture(t *testing.T) *batchFixture {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	db, err := Open(DriverPostgres, newPostgresSchema(t), Options{MaxOpenConns: 4, TracerProvider: tp})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return &batchFixture{db: db, store: NewRefreshTokenStore(db), spans: spans, tp: tp,
		user: newTestUser(t, NewUserRepository(db), "batch@example.com")}
}

// session stores a family of its own and returns its first token.
func (f *batchFixture) session(t *testing.T) domain.RefreshToken {
	t.Helper()
	now := time.Now()
	fam := domain.RefreshFamily{ID: randomHex(t), UserID: f.user.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	first := domain.RefreshToken{Hash: randomHex(t), FamilyID: fam.ID, UserID: f.user.ID, IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := f.store.CreateFamily(t.Context(), fam, first); err != nil {
		t.Fatal(err)
	}
	return first
}

// rotation is one RotateOwn of a batch and its outcome.
type rotation struct {
	used, next domain.RefreshToken
	tok        domain.RefreshToken
	rotated    bool
	err        error
}

// inOneBatch runs the rotations at once while every batch slot is held,
// then frees one slot once all are queued: the first to take it runs
// them all as one batch. Each runs within a trace of its own.
func (f *batchFixture) inOneBatch(t *testing.T, rotations []*rotation) {
	t.Helper()
	if len(rotations) > rotationBatchMax {
		t.Fatalf("%d rotations do not fit one batch of %d", len(rotations), rotationBatchMax)
	}
	b := f.db.rotations
	for range rotationsRunning {
		b.slots <- struct{}{}
	}
	var wg sync.WaitGroup
	for _, r := range rotations {
		wg.Go(func() {
			ctx, span := f.tp.Tracer("test").Start(t.Context(), "refresh")
			defer span.End()
			now := time.Now()
			if r.next.Hash == "" {
				r.next.Hash = randomHex(t)
			}
			r.next.IssuedAt, r.next.ExpiresAt = now, now.Add(time.Hour)
			r.tok, _, r.rotated, r.err = f.store.RotateOwn(ctx, r.used.Hash, now, r.next)
		})
	}
	waitQueued(t, b, len(rotations))
	<-b.slots
	wg.Wait()
	for range rotationsRunning - 1 {
		<-b.slots
	}
}

// waitQueued waits until n rotations wait in b's queue.
func waitQueued(t *testing.T, b *rotationBatches, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		queued := len(b.queue)
		b.mu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rotations queued, want %d", queued, n)
		}
	}
}

// batchSizes are the db.operation.batch.size of the rotation spans.
func (f *batchFixture) batchSizes() []int64 {
	var sizes []int64
	for _, sp := range f.spans.GetSpans() {
		for _, a := range sp.Attributes {
			if a.Key == attribute.Key("db.operation.batch.size") {
				sizes = append(sizes, a.Value.AsInt64())
			}
		}
	}
	return sizes
}

// wantSizes checks that every rotation span tells the batch size want.
func (f *batchFixture) wantSizes(t *testing.T, n int, want int64) {
	t.Helper()
	sizes := f.batchSizes()
	if len(sizes) != n {
		t.Fatalf("%d rotation spans with a batch size, want %d", len(sizes), n)
	}
	for _, s := range sizes {
		if s != want {
			t.Errorf("batch size %d, want %d (all: %v)", s, want, sizes)
		}
	}
}

// wantRotated checks that r rotated: its token is used, to its successor,
// which is stored.
func (f *batchFixture) wantRotated(t *testing.T, r *rotation) {
	t.Helper()
	if r.err != nil || !r.rotated {
		t.Errorf("RotateOwn = %v, %v; want true, nil", r.rotated, r.err)
		return
	}
	used, _, err := f.store.Lookup(t.Context(), r.used.Hash)
	if err != nil || used.UsedAt == nil || used.SuccessorHash != r.next.Hash {
		t.Errorf("used token after its rotation = %+v, %v; want used, to %s", used, err, r.next.Hash)
	}
	if _, _, err := f.store.Lookup(t.Context(), r.next.Hash); err != nil {
		t.Errorf("Lookup(successor) = %v", err)
	}
}

// Rotations that arrive while the batch slots are busy run as one batch,
// each as it would alone: every token rotated, its successor stored, and
// each caller's span tells the batch's size.
func TestRotationBatches_rotate_together(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t)
	rotations := make([]*rotation, rotationBatchMax)
	for i := range rotations {
		rotations[i] = &rotation{used: f.session(t)}
	}
	f.inOneBatch(t, rotations)
	for _, r := range rotations {
		f.wantRotated(t, r)
	}
	f.wantSizes(t, len(rotations), int64(len(rotations)))
}

// Two rotations of one token in one batch: the batch runs them one after
// the other, so exactly one rotates, and the other reads the token as the
// first left it (used, to the first's successor), as it would have after
// it; the rest of the batch rotates.
func TestRotationBatches_one_token_twice(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t)
	shared := f.session(t)
	a, b, other := &rotation{used: shared}, &rotation{used: shared}, &rotation{used: f.session(t)}
	f.inOneBatch(t, []*rotation{a, b, other})
	if a.err != nil || b.err != nil {
		t.Fatalf("RotateOwn of one token twice = %v, %v", a.err, b.err)
	}
	if a.rotated == b.rotated {
		t.Fatalf("of two rotations of one token, rotated = %v and %v; want exactly one", a.rotated, b.rotated)
	}
	winner, loser := a, b
	if b.rotated {
		winner, loser = b, a
	}
	f.wantRotated(t, winner)
	if loser.tok.UsedAt == nil || loser.tok.SuccessorHash != winner.next.Hash {
		t.Errorf("the second rotation read the token as %+v; want it used, to %s", loser.tok, winner.next.Hash)
	}
	if _, _, err := f.store.Lookup(t.Context(), loser.next.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
		t.Errorf("Lookup(the loser's successor) = %v, want ErrRefreshTokenInvalid", err)
	}
	f.wantRotated(t, other)
	f.wantSizes(t, 3, 3)
}

// A batch that fails as a whole keeps nothing, and each of its rotations
// runs again alone: here two successors with one hash make the batch's
// insert fail; alone, the first of them to run rotates and the second
// fails, and the rest of the batch rotates.
func TestRotationBatches_failed_batch_runs_each_alone(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t)
	clash := randomHex(t)
	a := &rotation{used: f.session(t), next: domain.RefreshToken{Hash: clash}}
	b := &rotation{used: f.session(t), next: domain.RefreshToken{Hash: clash}}
	others := []*rotation{{used: f.session(t)}, {used: f.session(t)}}
	f.inOneBatch(t, append([]*rotation{a, b}, others...))
	if (a.err == nil) == (b.err == nil) || a.rotated == b.rotated {
		t.Fatalf("two successors of one hash: (%v, %v) and (%v, %v); want one rotated, the other failed",
			a.rotated, a.err, b.rotated, b.err)
	}
	winner, loser := a, b
	if b.rotated {
		winner, loser = b, a
	}
	f.wantRotated(t, winner)
	if used, _, err := f.store.Lookup(t.Context(), loser.used.Hash); err != nil || used.UsedAt != nil {
		t.Errorf("the failed rotation's token = %+v, %v; want it unused", used, err)
	}
	for _, r := range others {
		f.wantRotated(t, r)
	}
	f.wantSizes(t, 4, 1)
}

// A batch waits for a lock at most rotationBatchLockWait: held longer by
// another transaction (a revocation of every session of a user, which
// may in turn wait for a family the batch holds), the batch gives up, and
// its rotations, alone, wait for the lock as a rotation always has, and
// rotate once it is released. The lock wait was the batch's transaction's
// own: the connections wait as long as they need afterwards.
func TestRotationBatches_lock_held_by_another(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t)
	locked, free := &rotation{used: f.session(t)}, &rotation{used: f.session(t)}
	holder := f.db.gorm.WithContext(t.Context()).Begin()
	if holder.Error != nil {
		t.Fatal(holder.Error)
	}
	if err := holder.Exec(`SELECT id FROM refresh_families WHERE id = ? FOR UPDATE`, locked.used.FamilyID).Error; err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		// Longer than the batch waits, so that it gives up first.
		time.Sleep(5 * lockWait(t))
		if err := holder.Commit().Error; err != nil {
			t.Errorf("commit the lock holder: %v", err)
		}
	}()
	f.inOneBatch(t, []*rotation{locked, free})
	<-released
	f.wantRotated(t, locked)
	f.wantRotated(t, free)
	f.wantSizes(t, 2, 1)
}

func lockWait(t *testing.T) time.Duration {
	d, err := time.ParseDuration(rotationBatchLockWait)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A rotation whose caller gives up while it waits for a batch leaves the
// queue and is never run.
func TestRotationBatches_cancelled_while_queued(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t)
	b := f.db.rotations
	for range rotationsRunning {
		b.slots <- struct{}{}
	}
	used := f.session(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		now := time.Now()
		_, _, _, err := f.store.RotateOwn(ctx, used.Hash, now, domain.RefreshToken{Hash: randomHex(t), IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		done <- err
	}()
	waitQueued(t, b, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("RotateOwn cancelled while queued = %v, want context.Canceled", err)
	}
	waitQueued(t, b, 0)
	for range rotationsRunning {
		<-b.slots
	}
	if tok, _, err := f.store.Lookup(t.Context(), used.Hash); err != nil || tok.UsedAt != nil {
		t.Errorf("token after a cancelled rotation = %+v, %v; want it unused", tok, err)
	}
}
