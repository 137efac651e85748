package gormstore

import "testing"

func TestStats(t *testing.T) {
	db := openSQLite(t)
	if err := db.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := db.Stats()
	if s.MaxOpenConnections != 1 || s.OpenConnections != 1 {
		t.Errorf("SQLite pool stats = %+v, want one connection open of at most one", s)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.OpenConnections != 0 {
		t.Errorf("after Close, %d connections open", s.OpenConnections)
	}
}
