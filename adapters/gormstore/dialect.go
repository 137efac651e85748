package gormstore

// dialect is the SQL database a DB talks to. The stores branch on it where
// the databases differ (upserts, RETURNING, locks); everything else is
// the SQL they share.
type dialect uint8

const (
	dialectSQLite dialect = iota
	dialectPostgres
	dialectMySQL
)

// rowLocks reports whether a read that decides a write must lock its rows
// (SELECT … FOR UPDATE): on PostgreSQL and MySQL, where transactions run
// side by side; SQLite's BEGIN IMMEDIATE has serialised them already.
func (d dialect) rowLocks() bool { return d != dialectSQLite }
