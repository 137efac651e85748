package gormstore

import (
	"context"

	"gorm.io/gorm"
)

// The writes that answer the rows they change. SQLite (3.35+) and
// PostgreSQL make each in one statement, with RETURNING; MySQL has no
// RETURNING (dialect.returning) and makes each in a transaction of two
// statements, whose locks give the same answer to concurrent callers.
// Each type below holds both forms of one statement, written once when
// the package loads; the functions run the form of the DB's dialect. A
// store method names its statement, never the dialect.

// rowWrite is an UPDATE or a DELETE of at most one row, whose condition
// holds the row's key among its arguments, that answers the row: an
// updated row as written, a deleted one as it was.
type rowWrite struct {
	// returning is the UPDATE or DELETE … RETURNING of SQLite and
	// PostgreSQL.
	returning string
	// write and read are MySQL's form: the UPDATE or DELETE alone, and
	// the SELECT of the row. An update writes first, with all the
	// arguments, then reads the row by its key; a delete reads first,
	// with all the arguments, locking the row (FOR UPDATE), then deletes
	// it by its key.
	write, read string
	readFirst   bool
	// key is the index, among the arguments, of the row's key.
	key int
}

// newRowUpdate is UPDATE table SET set WHERE where, answering columns;
// keyColumn is the table's key, equal in where to the argument at index
// keyArg (counted over the arguments of set and where).
func newRowUpdate(table, set, where, columns, keyColumn string, keyArg int) rowWrite {
	update := "UPDATE " + table + " SET " + set + " WHERE " + where
	return rowWrite{
		returning: update + " RETURNING " + columns,
		write:     update,
		read:      "SELECT " + columns + " FROM " + table + " WHERE " + keyColumn + " = ?",
		key:       keyArg,
	}
}

// newRowDelete is DELETE FROM table WHERE where, answering columns;
// keyColumn is the table's key, equal in where to the argument at index
// keyArg.
func newRowDelete(table, where, columns, keyColumn string, keyArg int) rowWrite {
	return rowWrite{
		returning: "DELETE FROM " + table + " WHERE " + where + " RETURNING " + columns,
		write:     "DELETE FROM " + table + " WHERE " + keyColumn + " = ?",
		read:      "SELECT " + columns + " FROM " + table + " WHERE " + where + " FOR UPDATE",
		readFirst: true,
		key:       keyArg,
	}
}

// writeRow runs q with args, on the writer or in ctx's transaction, and
// returns the row it wrote and true; false when no row matched. On MySQL
// the two statements run in one transaction (a savepoint of ctx's): an
// update's read finds the row as written, which the UPDATE has locked; a
// delete's read locks the row it finds. Either way a concurrent write of
// the same row waits for the lock, then evaluates its condition on the
// row as this one left it (READ COMMITTED), as on PostgreSQL.
func writeRow[R any](ctx context.Context, db *DB, q rowWrite, args ...any) (R, bool, error) {
	var rows []R
	var err error
	if db.dialect.returning() {
		err = db.writer(ctx).Raw(q.returning, args...).Scan(&rows).Error
	} else {
		err = db.transaction(ctx, func(tx *gorm.DB) error {
			rows = nil // the transaction may run again (see transaction)
			return q.mysql(tx, &rows, args)
		})
	}
	return firstRow(rows, err)
}

// mysql runs MySQL's form of q in tx, scanning the row into rows, a
// pointer to a slice of rows.
func (q rowWrite) mysql(tx *gorm.DB, rows any, args []any) error {
	if q.readFirst {
		found := tx.Raw(q.read, args...).Scan(rows)
		if found.Error != nil || found.RowsAffected == 0 {
			return found.Error
		}
		return tx.Exec(q.write, args[q.key]).Error
	}
	res := tx.Exec(q.write, args...)
	if res.Error != nil || res.RowsAffected == 0 {
		return res.Error
	}
	return tx.Raw(q.read, args[q.key]).Scan(rows).Error
}

// firstRow is the answer of a write of at most one row.
func firstRow[R any](rows []R, err error) (R, bool, error) {
	if err != nil || len(rows) == 0 {
		var none R
		return none, false, err
	}
	return rows[0], true, nil
}

// setUpdate is an UPDATE of the rows a condition chooses, any number,
// that answers them as chosen: it writes none of the columns it answers
// (a lease's end, a revocation's time).
type setUpdate struct {
	// returning is the statement of SQLite and PostgreSQL, which updates
	// the rows and answers them.
	returning string
	// choose is the SELECT … FOR UPDATE of the rows, and update the
	// UPDATE … WHERE key IN ? of the rows chosen: MySQL's form.
	choose, update string
}

// updateSet runs q on the writer or in ctx's transaction (on MySQL, in a
// transaction of its own or a savepoint of ctx's) and returns the rows it
// updated: see updateSetIn.
func updateSet[R any](ctx context.Context, db *DB, q setUpdate, key func(R) string, args, choose, set []any) ([]R, error) {
	if db.dialect.returning() {
		return updateSetIn(db.writer(ctx), db.dialect, q, key, args, choose, set)
	}
	var rows []R
	err := db.transaction(ctx, func(tx *gorm.DB) error {
		var err error
		rows, err = updateSetIn(tx, db.dialect, q, key, args, choose, set)
		return err
	})
	return rows, err
}

// updateSetIn runs q on g and returns the rows it updated. args are the
// arguments of q.returning; choose and set, slices of args, those of
// MySQL's SELECT and of its SET, which key, giving a row's key, completes
// with the keys of the rows chosen. On MySQL g must be a transaction: the
// rows are read and locked, then updated by key; a concurrent update of
// the same rows waits for the locks, and (when choose skips locked rows)
// a concurrent choice passes over them.
func updateSetIn[R any](g *gorm.DB, d dialect, q setUpdate, key func(R) string, args, choose, set []any) ([]R, error) {
	var rows []R
	if d.returning() {
		err := g.Raw(q.returning, args...).Scan(&rows).Error
		return rows, err
	}
	if err := g.Raw(q.choose, choose...).Scan(&rows).Error; err != nil || len(rows) == 0 {
		return rows, err
	}
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = key(r)
	}
	// set is a part of args: the keys go after a copy of it.
	if err := g.Exec(q.update, append(set[:len(set):len(set)], keys)...).Error; err != nil {
		return nil, err
	}
	return rows, nil
}

// ownKey is the key of a row answered as its key alone (an id).
func ownKey(id string) string { return id }
