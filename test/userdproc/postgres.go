package userdproc

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver that makes the test schemas
)

// PostgresSchema makes an empty schema, named prefix and random
// characters, in USERD_TEST_POSTGRES_DSN, dropped when the test ends, and
// returns a DSN that selects it, for the nodes of one test. Without the
// variable it skips the test, or fails it when CI=true (CI must run
// every PostgreSQL test).
func PostgresSchema(t testing.TB, prefix string) string {
	t.Helper()
	base := RequiredEnv(t, "USERD_TEST_POSTGRES_DSN", "PostgreSQL")
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() }) // after the drop below
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" {
		return strings.TrimSpace(base) + " search_path=" + schema // key=value form
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
