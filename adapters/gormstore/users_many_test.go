package gormstore

import (
	"reflect"
	"testing"
)

// usersPerInsert is sized by userColumns: a column added to userRow must be
// counted there too, or a multi-row INSERT of CreateMany could pass
// SQLite's parameter limit.
func TestUserColumnsMatchUserRow(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeFor[userRow]().NumField(); n != len(userColumns) {
		t.Fatalf("userRow has %d fields, userColumns %d", n, len(userColumns))
	}
	if usersPerInsert*len(userColumns) > sqliteMaxVariables {
		t.Fatalf("%d rows of %d columns exceed %d parameters", usersPerInsert, len(userColumns), sqliteMaxVariables)
	}
}
