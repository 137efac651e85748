package faults

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// TestCrashDuringWrites (case 2) SIGKILLs userd under a load of creates
// and refresh-token rotations, three times, restarting it on the same
// database each time. Every acknowledged create (201) must be readable;
// the latest acknowledged refresh token of every chain must still refresh
// (unused, or used by a rotation whose answer the kill swallowed and thus
// inside the 60 s grace window, which answers with the same successor);
// the database must pass its integrity check; and no refresh family may
// have two live tokens.
func TestCrashDuringWrites(t *testing.T) {
	requireFaults(t)
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "userd.db")
		b := crashBackend{
			name: "SQLite " + path,
			env:  map[string]string{"USERD_DB_DRIVER": "sqlite", "USERD_DB_DSN": path},
			open: func(t *testing.T) (*sql.DB, string) {
				// A copy, so that the check's recovery of the WAL does not
				// spare userd its own.
				return openSQLiteCopy(t, path), "sqlite"
			},
		}
		b.run(t)
	})
	t.Run("postgres", func(t *testing.T) {
		pg := newPGCluster(t)
		db := pg.createDB("userd")
		b := crashBackend{
			name: fmt.Sprintf("PostgreSQL 127.0.0.1:%d/userd", pg.port),
			env:  map[string]string{"USERD_DB_DRIVER": "postgres", "USERD_DB_DSN": pg.dsn("userd"), "USERD_SECRET_KEY": newSecretKey()},
			open: func(*testing.T) (*sql.DB, string) { return db, "postgres" },
			amcheck: func(t *testing.T) string {
				out, err := pg.run("pg_amcheck", "-h", "127.0.0.1", "-p", fmt.Sprint(pg.port), "-U", "postgres",
					"--install-missing", "--heapallindexed", "userd")
				if err != nil {
					t.Errorf("pg_amcheck: %v\n%s", err, out)
					return "failed"
				}
				return "pg_amcheck ok"
			},
		}
		b.run(t)
	})
}

type crashBackend struct {
	name string
	env  map[string]string
	// open returns the database as it is after a kill, and its dialect.
	open func(t *testing.T) (*sql.DB, string)
	// amcheck, when set, checks the database's integrity (PostgreSQL).
	amcheck func(t *testing.T) string
}

// chain is one session rotated over and over by one worker.
type chain struct {
	email string
	last  string // the latest acknowledged refresh token
	// acked counts the acknowledged rotations, unacked the requests whose
	// answer never came (the kill), retried the 503s.
	acked, unacked, retried int
}

func (b crashBackend) run(t *testing.T) {
	const (
		rounds        = 3
		createWorkers = 4
		chains        = 8
		maxPerWorker  = 20000
	)
	env := map[string]string{"USERD_REFRESH_REUSE_GRACE": "60s"}
	for k, v := range b.env {
		env[k] = v
	}
	srv := newServer(t, "userd", env)
	srv.start()
	a := newAPI(srv.base, 32, 10*time.Second)
	defer a.close()
	admin := a.adminLogin(t)
	run := runID()

	cs := make([]*chain, chains)
	for i := range cs {
		email := fmt.Sprintf("chain-%s-%d@example.com", run, i)
		a.mustCreate(t, email)
		cs[i] = &chain{email: email, last: a.mustLogin(t, email, userPassword).RefreshToken}
	}

	var (
		created    acked
		mu         sync.Mutex
		ambiguous  []string
		unexpected []string
		sent       int
		integrity  []string
	)
	bad := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(unexpected) < 20 {
			unexpected = append(unexpected, fmt.Sprintf(format, args...))
		}
	}
	began := time.Now()
	for round := 1; round <= rounds; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		killAfter := time.Duration(1000+500*round) * time.Millisecond
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			runWorkers(ctx, createWorkers, maxPerWorker, 0, func(ctx context.Context, w, i int) bool {
				email := fmt.Sprintf("crash-%s-r%d-%d-%d@example.com", run, round, w, i)
				r := a.createUser(ctx, email)
				mu.Lock()
				sent++
				mu.Unlock()
				switch {
				case r.status == http.StatusCreated:
					var u user
					if err := json.Unmarshal(r.body, &u); err != nil || u.ID == "" {
						bad("create %s: 201 with %q", email, r.body)
						return true
					}
					created.add(u)
					return true
				case r.err != nil || r.status == http.StatusServiceUnavailable:
					// The kill: the create may or may not be committed.
					mu.Lock()
					ambiguous = append(ambiguous, email)
					mu.Unlock()
					return r.err == nil
				}
				bad("create %s: %s", email, r)
				return false
			})
		}()
		go func() {
			defer wg.Done()
			runWorkers(ctx, chains, maxPerWorker, 0, func(ctx context.Context, w, _ int) bool {
				c := cs[w]
				r := a.refresh(ctx, c.last)
				mu.Lock()
				sent++
				mu.Unlock()
				switch {
				case r.status == http.StatusOK:
					var tk tokens
					if err := json.Unmarshal(r.body, &tk); err != nil || tk.RefreshToken == "" || tk.RefreshToken == c.last {
						bad("refresh of chain %d: 200 without a new token: %q", w, r.body)
						return false
					}
					c.last = tk.RefreshToken
					c.acked++
					return true
				case r.status == http.StatusServiceUnavailable:
					c.retried++
					return true
				case r.err != nil:
					c.unacked++
					return false
				}
				bad("refresh of chain %d (round %d): %s", w, round, r)
				return false
			})
		}()
		time.Sleep(killAfter)
		srv.kill()
		killedAt := time.Since(began)
		wg.Wait()
		cancel()
		// Connections to the dead process must not be reused.
		a.close()

		// The database as the crash left it.
		db, dialect := b.open(t)
		check := checkDatabase(t, db, dialect, cs)
		if dialect == "sqlite" {
			mustClose(t, db)
		}
		if b.amcheck != nil {
			check += "; " + b.amcheck(t)
		}
		integrity = append(integrity, fmt.Sprintf("round %d: killed at +%s after %s of load; acknowledged so far: %d creates, %d rotations; %s",
			round, killedAt.Round(time.Millisecond), killAfter, created.len(), totalRotations(cs), check))
		srv.start()
	}

	// After the last restart: every acknowledged write is there.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	acks := created.list()
	readOK, readFailures := verifyReadable(ctx, a, admin.AccessToken, acks)
	refreshOK := 0
	for i, c := range cs {
		r := a.refresh(ctx, c.last)
		if r.status == http.StatusOK {
			refreshOK++
			continue
		}
		bad("chain %d: the latest acknowledged refresh token (after %d acknowledged rotations, %d unanswered) fails: %s",
			i, c.acked, c.unacked, r)
	}
	committed := 0
	for _, email := range ambiguous {
		r := a.do(ctx, http.MethodGet, "/api/users?email="+url.QueryEscape(email), nil, admin.AccessToken)
		if r.status == http.StatusOK && strings.Contains(string(r.body), email) {
			committed++
		}
	}
	srv.stop()
	db, dialect := b.open(t)
	final := checkDatabase(t, db, dialect, nil)
	if dialect == "sqlite" {
		mustClose(t, db)
	}

	unacked := 0
	for _, c := range cs {
		unacked += c.unacked
	}
	t.Logf("did: on %s, %d rounds of %d create workers and %d refresh chains without pause, each ended by SIGKILL, then a restart on the same database",
		b.name, rounds, createWorkers, chains)
	for _, line := range integrity {
		t.Logf("%s", line)
	}
	t.Logf("requests sent: %d; creates acknowledged: %d, unanswered (killed): %d (committed anyway: %d); rotations acknowledged: %d, unanswered: %d",
		sent, len(acks), len(ambiguous), committed, totalRotations(cs), unacked)
	t.Logf("verified afterwards: %d/%d acknowledged creates readable (lost: %d); %d/%d chains refresh their latest acknowledged token (lost: %d)",
		readOK, len(acks), len(acks)-readOK, refreshOK, len(cs), len(cs)-refreshOK)
	t.Logf("after the final clean stop: %s", final)
	reportLogs(t, srv)

	for _, u := range unexpected {
		t.Error(u)
	}
	if len(acks) != readOK {
		t.Errorf("%d acknowledged creates lost: %s", len(acks)-readOK, strings.Join(readFailures, "\n"))
	}
	if len(acks) == 0 || totalRotations(cs) == 0 {
		t.Errorf("nothing was acknowledged: the case tested nothing")
	}
}

func totalRotations(cs []*chain) int {
	n := 0
	for _, c := range cs {
		n += c.acked
	}
	return n
}

// checkDatabase checks a database userd is not running on: its integrity
// (SQLite), that no refresh family has two live tokens, and that the
// latest acknowledged token of every chain is stored. It fails the test on
// a violation and returns a summary.
func checkDatabase(t *testing.T, db *sql.DB, dialect string, cs []*chain) string {
	t.Helper()
	var parts []string
	if dialect == "sqlite" {
		rows, err := db.Query("PRAGMA integrity_check")
		if err != nil {
			t.Fatalf("integrity_check: %v", err)
		}
		var res []string
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			res = append(res, s)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatalf("integrity_check: %v", err)
		}
		if len(res) != 1 || res[0] != "ok" {
			t.Errorf("PRAGMA integrity_check: %q", res)
		}
		var fk int
		if err := db.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil {
			t.Fatalf("foreign_key_check: %v", err)
		}
		if fk != 0 {
			t.Errorf("PRAGMA foreign_key_check: %d violations", fk)
		}
		parts = append(parts, fmt.Sprintf("integrity_check %s, foreign_key_check %d violations", strings.Join(res, ","), fk))
	}
	now := time.Now().UnixMicro()
	var families, live, doubled int
	err := db.QueryRow(fmt.Sprintf(`SELECT COUNT(DISTINCT family_id),
			COALESCE(SUM(CASE WHEN used_at IS NULL AND expires_at > %d THEN 1 ELSE 0 END), 0)
		FROM refresh_tokens`, now)).Scan(&families, &live)
	if err != nil {
		t.Fatalf("count refresh tokens: %v", err)
	}
	err = db.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM (
			SELECT family_id FROM refresh_tokens WHERE used_at IS NULL AND expires_at > %d
			GROUP BY family_id HAVING COUNT(*) > 1) AS d`, now)).Scan(&doubled)
	if err != nil {
		t.Fatalf("count doubled families: %v", err)
	}
	if doubled != 0 {
		t.Errorf("%d refresh families have two or more live tokens", doubled)
	}
	parts = append(parts, fmt.Sprintf("%d refresh families, %d live tokens, %d families with two live tokens", families, live, doubled))
	if cs != nil {
		stored, consumed := 0, 0
		q := "SELECT COUNT(*), COALESCE(SUM(CASE WHEN used_at IS NULL THEN 0 ELSE 1 END), 0) FROM refresh_tokens WHERE token_hash = ?"
		if dialect == "postgres" {
			q = strings.Replace(q, "?", "$1", 1)
		}
		for i, c := range cs {
			sum := sha256.Sum256([]byte(c.last))
			var n, used int
			if err := db.QueryRow(q, hex.EncodeToString(sum[:])).Scan(&n, &used); err != nil {
				t.Fatalf("look up token: %v", err)
			}
			consumed += used
			if n == 1 {
				stored++
			} else {
				t.Errorf("chain %d: its latest acknowledged refresh token is not stored", i)
			}
		}
		parts = append(parts, fmt.Sprintf("latest acknowledged token stored for %d/%d chains, "+
			"%d of them consumed by a rotation whose answer the kill swallowed (their next refresh takes the grace path)",
			stored, len(cs), consumed))
	}
	return strings.Join(parts, "; ")
}

// openSQLiteCopy copies the database file with its WAL and shared-memory
// files into a new folder and opens the copy.
func openSQLiteCopy(t *testing.T, path string) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		src, err := os.Open(path + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(dir, "copy.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		_ = src.Close() // read only
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "copy.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	return db
}
