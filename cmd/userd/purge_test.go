package main

import (
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/domain"
)

// `userd purge --dry-run` counts what `userd purge` then deletes: here an
// expired session and an old audit event, on SQLite.
func TestRun_purge_on_sqlite(t *testing.T) {
	dsn := importDB(t)
	if code, out, errOut := runCLI(t, "", "migrate", "up"); code != exitOK {
		t.Fatalf("migrate up: exit %d: %s %s", code, out, errOut)
	}
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-400 * 24 * time.Hour)
	u := domain.User{ID: domain.NewUserID(long), Name: "Old", Email: "old@example.com", PasswordHash: "x",
		Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: long, UpdatedAt: long}
	if err := gormstore.NewUserRepository(db).Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	fam := domain.RefreshFamily{ID: "f1", UserID: u.ID, CreatedAt: long, ExpiresAt: long.Add(90 * 24 * time.Hour)}
	tok := domain.RefreshToken{Hash: "h1", FamilyID: "f1", UserID: u.ID, IssuedAt: long, ExpiresAt: fam.ExpiresAt}
	if err := gormstore.NewRefreshTokenStore(db).CreateFamily(t.Context(), fam, tok); err != nil {
		t.Fatal(err)
	}
	if err := gormstore.NewAuditLog(db).Record(t.Context(), domain.AuditEvent{ID: domain.NewAuditID(long), Time: long, Type: domain.AuditLoginSucceeded}); err != nil {
		t.Fatal(err)
	}
	mustClose(t, db)

	rows := func(out string) map[string]string {
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			f := strings.Fields(line)
			got[f[0]] = f[len(f)-1]
		}
		return got
	}
	code, out, errOut := runCLI(t, "", "purge", "--dry-run")
	if got := rows(out); code != exitOK || !strings.HasPrefix(out, "KIND") || !strings.Contains(out, "WOULD GO") ||
		got["refresh_families"] != "1" || got["audit_events"] != "1" || got["link_tokens"] != "0" || got["total"] != "2" {
		t.Fatalf("purge --dry-run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "purge")
	if got := rows(out); code != exitOK || !strings.Contains(out, "PURGED") || got["refresh_families"] != "1" || got["total"] != "2" {
		t.Fatalf("purge: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Setenv("USERD_AUDIT_RETENTION", "0")
	code, out, errOut = runCLI(t, "", "purge", "--dry-run")
	if got := rows(out); code != exitOK || got["total"] != "0" || !strings.Contains(out, "never (USERD_AUDIT_RETENTION=0)") {
		t.Fatalf("purge --dry-run after the purge: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestRun_purge_refuses_memory(t *testing.T) {
	t.Setenv("USERD_DB_DRIVER", "memory")
	if code, _, errOut := runCLI(t, "", "purge"); code != exitFailure || !strings.Contains(errOut, "memory") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
