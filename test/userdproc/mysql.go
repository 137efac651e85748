package userdproc

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/go-sql-driver/mysql" // also the database/sql driver that makes the test databases
)

// MySQLDatabase makes an empty database, named prefix and random
// characters, on the server of USERD_TEST_MYSQL_DSN, dropped when the test
// ends, and returns a DSN that selects it, for the nodes of one test (a
// MySQL schema is a database). Without the variable it skips the test,
// or fails it when CI=true (CI must run every MySQL test).
func MySQLDatabase(t testing.TB, prefix string) string {
	t.Helper()
	base := RequiredEnv(t, "USERD_TEST_MYSQL_DSN", "MySQL")
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("USERD_TEST_MYSQL_DSN: %v", err)
	}
	db, err := sql.Open("mysql", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // after the drop below
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
