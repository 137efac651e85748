package gormstore

import (
	"testing"
)

// TestLockAcrossNodes: on PostgreSQL the lock excludes another node (a
// pool of its own on the schema) until released.
func TestLockAcrossNodes(t *testing.T) {
	t.Parallel()
	db := openPostgres(t)
	open := func() *DB {
		node, err := Open(db.driver, db.dsn, Options{MaxOpenConns: 2})
		if err != nil {
			t.Fatalf("open another node: %v", err)
		}
		return node
	}
	a, b := open(), open()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	releaseA, ok, err := NewLock(a).TryLock(t.Context(), "purge")
	if err != nil || !ok {
		t.Fatalf("node a: TryLock = %v, %v; want it taken", ok, err)
	}
	if _, ok, err := NewLock(b).TryLock(t.Context(), "purge"); err != nil || ok {
		t.Fatalf("node b while a holds it: TryLock = %v, %v; want refused", ok, err)
	}
	releaseA()
	release, ok, err := NewLock(b).TryLock(t.Context(), "purge")
	if err != nil || !ok {
		t.Fatalf("node b after a released: TryLock = %v, %v; want it taken", ok, err)
	}
	release()
	// Released, the lock is free again and the connection back in the
	// pool no longer holds it.
	release2, ok, err := NewLock(db).TryLock(t.Context(), "purge")
	if err != nil || !ok {
		t.Fatalf("another node after b released: TryLock = %v, %v; want it taken", ok, err)
	}
	release2()
}
