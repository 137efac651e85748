package gormstore

import "testing"

func TestSQLiteFile(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"userd.db":                             "userd.db",
		"/var/lib/userd/userd.db":              "/var/lib/userd/userd.db",
		"userd.db?_busy_timeout=50":            "userd.db",
		"file:userd.db":                        "userd.db",
		"file:/var/lib/userd/userd.db?mode=rw": "/var/lib/userd/userd.db",
		"file:///var/lib/userd/userd.db":       "/var/lib/userd/userd.db",
		"file://localhost/var/lib/u%20d.db":    "/var/lib/u d.db",
		"file:my%20data.db":                    "my data.db",
		":memory:":                             "",
		"file::memory:?cache=shared":           "",
		"file:mem?mode=memory&cache=shared":    "",
		"file://otherhost/userd.db":            "",
		"":                                     "",
	} {
		got, ok := SQLiteFile(dsn)
		if got != want || ok != (want != "") {
			t.Errorf("SQLiteFile(%q) = %q, %v; want %q", dsn, got, ok, want)
		}
	}
}
