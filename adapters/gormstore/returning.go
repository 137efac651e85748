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

// rowUpdate is an UPDATE of at most one row, whose condition holds the
// row's key among its arguments, that answers the row as written.
type rowUpdate struct {
	// returning is the UPDATE … RETURNING of SQLite and PostgreSQL.
	returning string
	// update is the UPDATE alone, and read the SELECT of the row by its
	// key: MySQL's form.
	update, read string
	// key is the index, among the UPDATE's arguments, of the row's key.
	key int
}

// newRowUpdate is UPDATE table SET set WHERE where, answering columns;
// keyColumn is the table's key, equal in where to the argument at index
// keyArg (counted over the arguments of set and where).
func newRowUpdate(table, set, where, columns, keyColumn string, keyArg int) rowUpdate {
	update := "UPDATE " + table + " SET " + set + " WHERE " + where
	return rowUpdate{
		returning: update + " RETURNING " + columns,
		update:    update,
		read:      "SELECT " + columns + " FROM " + table + " WHERE " + keyColumn + " = ?",
		key:       keyArg,
	}
}

// updateRow runs q with args, on the writer or in ctx's transaction, and
// returns the row it changed, as written, and true; false when no row
// matched. On MySQL the UPDATE and, when it matched a row, the read of
// that row by its key run in one transaction (a savepoint of ctx's): the
// update has locked the row, so the read finds it as written, and a
// concurrent update of the same row waits for the lock, then evaluates its
// condition on the row this one wrote (READ COMMITTED), as on PostgreSQL.
func updateRow[R any](ctx context.Context, db *DB, q rowUpdate, args ...any) (R, bool, error) {
	var rows []R
	var err error
	if db.dialect.returning() {
		err = db.writer(ctx).Raw(q.returning, args...).Scan(&rows).Error
	} else {
		err = db.transaction(ctx, func(tx *gorm.DB) error {
			rows = nil // the transaction may run again (see transaction)
			res := tx.Exec(q.update, args...)
			if res.Error != nil || res.RowsAffected == 0 {
				return res.Error
			}
			return tx.Raw(q.read, args[q.key]).Scan(&rows).Error
		})
	}
	return firstRow(rows, err)
}

// rowDelete is a DELETE of at most one row, whose condition holds the
// row's key among its arguments, that answers the row as it was.
type rowDelete struct {
	// returning is the DELETE … RETURNING of SQLite and PostgreSQL.
	returning string
	// find is the SELECT … FOR UPDATE of the row, and del the DELETE of
	// it by its key: MySQL's form.
	find, del string
	// key is the index, among the condition's arguments, of the row's key.
	key int
}

// newRowDelete is DELETE FROM table WHERE where, answering columns;
// keyColumn is the table's key, equal in where to the argument at index
// keyArg.
func newRowDelete(table, where, columns, keyColumn string, keyArg int) rowDelete {
	return rowDelete{
		returning: "DELETE FROM " + table + " WHERE " + where + " RETURNING " + columns,
		find:      "SELECT " + columns + " FROM " + table + " WHERE " + where + " FOR UPDATE",
		del:       "DELETE FROM " + table + " WHERE " + keyColumn + " = ?",
		key:       keyArg,
	}
}

// deleteRow runs q with args, on the writer or in ctx's transaction, and
// returns the row it removed and true; false when no row matched. On
// MySQL the row is read and locked, then deleted by its key, in one
// transaction (a savepoint of ctx's): a concurrent delete of the same row
// waits for the lock, then finds the row gone.
func deleteRow[R any](ctx context.Context, db *DB, q rowDelete, args ...any) (R, bool, error) {
	var rows []R
	var err error
	if db.dialect.returning() {
		err = db.writer(ctx).Raw(q.returning, args...).Scan(&rows).Error
	} else {
		err = db.transaction(ctx, func(tx *gorm.DB) error {
			rows = nil // the transaction may run again (see transaction)
			if err := tx.Raw(q.find, args...).Scan(&rows).Error; err != nil || len(rows) == 0 {
				return err
			}
			return tx.Exec(q.del, args[q.key]).Error
		})
	}
	return firstRow(rows, err)
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
