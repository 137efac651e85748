package gormstore

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// The lock condition of the reservation is domain.LoginDelay unrolled into
// SQL: evaluated by each database, it must agree with the domain for every
// count, at the last instant of each lock and the first after it.
func TestLockedSQL_agrees_with_the_domain(t *testing.T) {
	query := "SELECT " + lockedSQL("x.f", "x.l", "x.n") +
		" FROM (SELECT CAST(? AS INTEGER) AS f, CAST(? AS BIGINT) AS l, CAST(? AS BIGINT) AS n) AS x"
	for _, b := range backends {
		if b.name == "mysql" {
			// mysqlReserve applies domain.LoginAttempts.Reserve itself:
			// MySQL runs no reserveSQL.
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			db := b.open(t)
			last := time.Unix(1_800_000_000, 0)
			for failures := range 70 {
				a := domain.LoginAttempts{Failures: failures, LastFailureAt: last}
				times := []time.Time{last, last.Add(-time.Second), last.Add(time.Second)}
				if until := a.LockedUntil(); !until.IsZero() {
					times = append(times, until.Add(-time.Microsecond), until)
				}
				for _, now := range times {
					var locked bool
					if err := db.gorm.Raw(query, failures, toMicros(last), toMicros(now)).Scan(&locked).Error; err != nil {
						t.Fatalf("%s: %v", query, err)
					}
					if want := a.RetryAfter(now) > 0; locked != want {
						t.Errorf("%d failures, %v after the last: SQL says locked=%v, the domain %v",
							failures, now.Sub(last), locked, want)
					}
				}
			}
		})
	}
}

// Two handles on one SQLite file are two processes sharing a database:
// their reservations for one email, made at once, admit the budget and no
// more.
func TestSQLiteReserveAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*LoginAttemptStore{NewLoginAttemptStore(openSQLiteDSN(t, path)), NewLoginAttemptStore(openSQLiteDSN(t, path))}
	const workers = 30
	var (
		mu       sync.Mutex
		admitted int
		wg       sync.WaitGroup
	)
	start := make(chan struct{})
	now := time.Now()
	for i := range workers {
		wg.Go(func() {
			<-start
			_, err := stores[i%2].Reserve(t.Context(), "ada@example.com", now)
			if _, locked := errors.AsType[*domain.TooManyAttemptsError](err); err != nil && !locked {
				t.Errorf("Reserve: %v", err)
				return
			}
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if admitted != domain.LoginFreeFailures {
		t.Fatalf("%d of %d reservations admitted over two handles, want %d", admitted, workers, domain.LoginFreeFailures)
	}
}
