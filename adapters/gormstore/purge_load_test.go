package gormstore

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// purgeLoadN is how many expired sessions TestPurgeUnderLoad purges:
// USERD_PURGE_LOAD_N, or a small number that keeps `make test` fast
// (`make purgeload` sets a million).
func purgeLoadN(t *testing.T) int {
	if s := os.Getenv("USERD_PURGE_LOAD_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("USERD_PURGE_LOAD_N=%q: want a positive number", s)
		}
		return n
	}
	return 20_000
}

// purgeLoadBatch is the batch of TestPurgeUnderLoad:
// USERD_PURGE_LOAD_BATCH, or housekeeping's.
func purgeLoadBatch(t *testing.T) int {
	if s := os.Getenv("USERD_PURGE_LOAD_BATCH"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("USERD_PURGE_LOAD_BATCH=%q: want a positive number", s)
		}
		return n
	}
	return application.DefaultPurgeBatch
}

// seedExpiredFamilies inserts n sessions of user that expired long ago,
// each with one token, in a few statements of the database's own (a
// million rows through the store's API would take most of an hour).
func seedExpiredFamilies(t *testing.T, db *DB, user domain.UserID, n int) {
	t.Helper()
	expired := toMicros(epochForLoad.Add(-24 * time.Hour))
	if db.dialect == dialectMySQL {
		seedExpiredFamiliesMySQL(t, db, user, n, expired)
		return
	}
	const chunk = 100_000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n)
		series := `WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?) `
		from1 := "s"
		if db.dialect == dialectPostgres {
			series, from1 = "", "generate_series(?::bigint, ?::bigint - 1) AS s(i)"
		}
		fam := series + `INSERT INTO refresh_families (id, user_id, created_at, expires_at)
			SELECT 'old-' || i, ?, ?, ? FROM ` + from1
		tok := series + `INSERT INTO refresh_tokens (token_hash, family_id, user_id, issued_at, expires_at)
			SELECT 'old-token-' || i, 'old-' || i, ?, ?, ? FROM ` + from1
		args := func() []any {
			if db.dialect == dialectPostgres {
				return []any{string(user), expired - 1, expired, from, to}
			}
			return []any{from, to, string(user), expired - 1, expired}
		}
		for _, q := range []string{fam, tok} {
			if err := db.gorm.Exec(q, args()...).Error; err != nil {
				t.Fatalf("seed expired sessions: %v", err)
			}
		}
	}
}

// epochForLoad is the load test's now: the live sessions end after it,
// the seeded ones before.
var epochForLoad = time.Now().UTC()

// loadResult is what one phase of the load measured.
type loadResult struct {
	ops int
	p50 time.Duration
	p99 time.Duration
}

// runLoad runs workers, each refreshing a session of its own (a Lookup,
// the read of every refresh, then a Rotate) as fast as it can, until
// stop is closed, and returns the latencies of the refreshes.
func runLoad(t *testing.T, store *RefreshTokenStore, user domain.UserID, workers int, stop <-chan struct{}) loadResult {
	t.Helper()
	var (
		mu    sync.Mutex
		all   []time.Duration
		fails atomic.Int64
		wg    sync.WaitGroup
	)
	for w := range workers {
		fam := domain.RefreshFamily{ID: fmt.Sprintf("live-%d-%d", w, time.Now().UnixNano()), UserID: user,
			CreatedAt: epochForLoad, ExpiresAt: epochForLoad.Add(24 * time.Hour)}
		hash := fam.ID + "-0"
		first := domain.RefreshToken{Hash: hash, FamilyID: fam.ID, UserID: user, IssuedAt: epochForLoad, ExpiresAt: fam.ExpiresAt}
		if err := store.CreateFamily(t.Context(), fam, first); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var lat []time.Duration
			defer func() { mu.Lock(); all = append(all, lat...); mu.Unlock() }()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				if _, _, err := store.Lookup(context.Background(), hash); err != nil {
					fails.Add(1)
					return
				}
				next := domain.RefreshToken{Hash: fmt.Sprintf("%s-%d", fam.ID, i), FamilyID: fam.ID, UserID: user,
					IssuedAt: epochForLoad, ExpiresAt: fam.ExpiresAt}
				ok, err := store.Rotate(context.Background(), hash, epochForLoad, next)
				if err != nil || !ok {
					fails.Add(1)
					return
				}
				lat = append(lat, time.Since(start))
				hash = next.Hash
			}
		})
	}
	wg.Wait()
	if n := fails.Load(); n > 0 {
		t.Fatalf("%d refreshes failed under the load", n)
	}
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("the load made no refresh")
	}
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*p))] }
	return loadResult{ops: len(all), p50: pct(0.50), p99: pct(0.99)}
}

// TestPurgeUnderLoad purges N expired sessions (with their tokens) as
// housekeeping does, while workers refresh live sessions, and compares the
// refreshes' p99 with that of the same load without the purge, measured
// first, over as long. The issue's goal is under twice as long; `make
// purgeload` runs it with a million sessions and prints the figures
// (docs/performance.md), and checks the goal. With the small N of `make
// test` it checks what does not hang on timing (every expired session
// purged, every refresh under the purge a success) and logs the figures:
// a purge of a few seconds under a shared 2-core machine's other tests
// moved the p99 ratio from 1.4 to 3.4 between runs, and timing goals
// belong to the load harness, not the suite.
func TestPurgeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	n := purgeLoadN(t)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			b.require(t)
			db := b.open(t)
			users := NewUserRepository(db)
			u := domain.User{ID: domain.NewUserID(epochForLoad), Name: "Load", Email: "load@example.com", PasswordHash: "x",
				Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: epochForLoad, UpdatedAt: epochForLoad}
			if err := users.Create(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			seedExpiredFamilies(t, db, u.ID, n)
			if db.dialect == dialectPostgres {
				for _, table := range []string{"refresh_families", "refresh_tokens"} {
					if err := db.gorm.Exec("ANALYZE " + table).Error; err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Logf("%s: seeded %d expired sessions in %s", b.name, n, time.Since(start).Round(time.Millisecond))
			store, purger := NewRefreshTokenStore(db), NewPurger(db)
			const workers = 8

			// The purge first, so that its length sets the baseline's.
			stop := make(chan struct{})
			var (
				purged      int
				purgeErr    error
				purgeTook   time.Duration
				purgeEnded  = make(chan struct{})
				loadDuring  loadResult
				loadStarted = make(chan struct{})
			)
			go func() {
				<-loadStarted
				time.Sleep(100 * time.Millisecond) // the load warms up
				t0 := time.Now()
				purged, purgeErr = application.PurgeInBatches(context.Background(), purger, domain.PurgeRefreshFamilies,
					epochForLoad.Add(-time.Hour), purgeLoadBatch(t), nil)
				purgeTook = time.Since(t0)
				time.Sleep(100 * time.Millisecond)
				close(stop)
				close(purgeEnded)
			}()
			close(loadStarted)
			loadDuring = runLoad(t, store, u.ID, workers, stop)
			<-purgeEnded
			if purgeErr != nil || purged != n {
				t.Fatalf("purged %d, %v; want %d", purged, purgeErr, n)
			}

			// The baseline: the same load, as long, with the expired rows
			// seeded again, so that it runs on tables of the same size.
			seedExpiredFamilies(t, db, u.ID, n)
			stop = make(chan struct{})
			time.AfterFunc(purgeTook+200*time.Millisecond, func() { close(stop) })
			base := runLoad(t, store, u.ID, workers, stop)

			ratio := float64(loadDuring.p99) / float64(base.p99)
			t.Logf("%s: purged %d expired sessions in %s (%.0f rows/s) under %d refreshing workers; "+
				"refresh p50/p99 without the purge %s/%s (%d refreshes), during it %s/%s (%d refreshes): p99 ratio %.2f",
				b.name, purged, purgeTook.Round(time.Millisecond), float64(purged)/purgeTook.Seconds(), workers,
				base.p50, base.p99, base.ops, loadDuring.p50, loadDuring.p99, loadDuring.ops, ratio)
			if os.Getenv("USERD_PURGE_LOAD_N") != "" && ratio >= 2 {
				t.Errorf("p99 during the purge is %.2f× the p99 without it; the goal is under 2×", ratio)
			}
		})
	}
}

// seedExpiredFamiliesMySQL is seedExpiredFamilies on MySQL, whose INSERT
// takes its WITH after the column list and whose recursion stops at a
// thousand rows by default: multi-row INSERTs built here instead.
func seedExpiredFamiliesMySQL(t *testing.T, db *DB, user domain.UserID, n int, expired int64) {
	t.Helper()
	const batch = 2_000
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		fams := make([]refreshFamilyRow, 0, to-from)
		toks := make([]refreshTokenRow, 0, to-from)
		for i := from; i < to; i++ {
			id := fmt.Sprintf("old-%d", i)
			fams = append(fams, refreshFamilyRow{ID: id, UserID: string(user), CreatedMicros: expired - 1, ExpiresMicros: expired, AMR: "pwd"})
			toks = append(toks, refreshTokenRow{Hash: "old-token-" + id[4:], FamilyID: id, UserID: string(user), IssuedMicros: expired - 1, ExpiresMicros: expired})
		}
		if err := db.gorm.Create(&fams).Error; err != nil {
			t.Fatalf("seed expired sessions: %v", err)
		}
		if err := db.gorm.Create(&toks).Error; err != nil {
			t.Fatalf("seed expired sessions: %v", err)
		}
	}
}
