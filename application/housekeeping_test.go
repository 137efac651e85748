package application_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// purgeCounts is a ports.PurgeMetrics that tests read.
type purgeCounts struct {
	mu   sync.Mutex
	rows map[domain.PurgeKind]int
}

func (c *purgeCounts) Purged(kind domain.PurgeKind, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil {
		c.rows = map[domain.PurgeKind]int{}
	}
	c.rows[kind] += n
}

func (c *purgeCounts) get(kind domain.PurgeKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows[kind]
}

// withHousekeeping gives the env a lock and counters; its store's purger
// (the bundle's) purges its store and audit log.
func withHousekeeping(lock ports.Lock, counts *purgeCounts, tune func(*application.Config)) envOption {
	return func(c *application.Config, d *application.Deps) {
		d.Stores.Lock, d.PurgeMetrics = lock, counts
		if tune != nil {
			tune(c)
		}
	}
}

// newHousekeepingEnv is an env whose housekeeping purges its own store.
func newHousekeepingEnv(t *testing.T, lock ports.Lock, counts *purgeCounts, tune func(*application.Config)) *env {
	t.Helper()
	return newEnv(t, withHousekeeping(lock, counts, tune))
}

func reportRows(r application.PurgeReport, kind domain.PurgeKind) (int, bool) {
	for _, k := range r.Kinds {
		if k.Kind == kind {
			return k.Rows, true
		}
	}
	return 0, false
}

func TestHousekeeping_sessions_go_only_past_expiry_and_the_grace(t *testing.T) {
	t.Parallel()
	counts := &purgeCounts{}
	e := newHousekeepingEnv(t, memory.NewLock(), counts, func(c *application.Config) { c.EndedSessionKeep = 16 * time.Minute })
	e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	// The family ends RefreshFamilyTTL after the login; its last access
	// token verifies for EndedSessionKeep more; the margin covers clocks.
	boundary := e.clock.Now().Add(testConfig().RefreshFamilyTTL + 16*time.Minute + domain.PurgeMargin)

	e.clock.Set(boundary)
	report, err := e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if n, _ := reportRows(report, domain.PurgeRefreshFamilies); n != 0 {
		t.Fatalf("at the boundary %d families purged; want none", n)
	}
	if _, _, err := e.store.RefreshTokens().Lookup(ctx, jwtHash(t, e, pair.RefreshToken)); err != nil {
		t.Fatalf("the family is gone at the boundary: %v", err)
	}

	e.clock.Advance(time.Microsecond)
	dry, err := e.svc.Housekeeping.DryRun(ctx)
	wantErr(t, err, nil)
	if n, _ := reportRows(dry, domain.PurgeRefreshFamilies); n != 1 {
		t.Fatalf("DryRun past the boundary: %d families; want 1", n)
	}
	report, err = e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if n, _ := reportRows(report, domain.PurgeRefreshFamilies); n != 1 || report.Locked {
		t.Fatalf("past the boundary: %+v; want 1 family purged", report)
	}
	if got := counts.get(domain.PurgeRefreshFamilies); got != 1 {
		t.Errorf("metrics counted %d families; want 1", got)
	}
	if _, _, err := e.store.RefreshTokens().Lookup(ctx, jwtHash(t, e, pair.RefreshToken)); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
		t.Errorf("Lookup after the purge = %v; want ErrRefreshTokenInvalid", err)
	}
}

// jwtHash is the stored hash of a refresh token, as the env's codec makes
// it.
func jwtHash(t *testing.T, e *env, token string) string {
	t.Helper()
	return startedCodec(t, e.store.Keys(testBox), e.clock).Hash(token)
}

func TestHousekeeping_batches_until_none_is_left(t *testing.T) {
	t.Parallel()
	counts := &purgeCounts{}
	e := newHousekeepingEnv(t, nil, counts, func(c *application.Config) { c.PurgeBatch = 2 })
	e.seed(t, "ada@example.com")
	for range 5 {
		login(t, e, "ada@example.com", seededPassword)
	}
	e.clock.Advance(testConfig().RefreshFamilyTTL + 24*time.Hour)
	report, err := e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if n, _ := reportRows(report, domain.PurgeRefreshFamilies); n != 5 {
		t.Fatalf("purged %d families in batches of 2; want 5", n)
	}
	if got := counts.get(domain.PurgeRefreshFamilies); got != 5 {
		t.Errorf("metrics counted %d; want 5", got)
	}
}

func TestHousekeeping_audit_retention(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		retention time.Duration
		wantKind  bool
	}{
		{"zero_keeps_events_for_ever", 0, false},
		{"events_older_than_the_retention_go", 48 * time.Hour, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newHousekeepingEnv(t, nil, &purgeCounts{}, func(cfg *application.Config) { cfg.AuditRetention = c.retention })
			e.seed(t, "ada@example.com")
			login(t, e, "ada@example.com", seededPassword)
			events := e.audit.Len()
			if events == 0 {
				t.Fatal("the login recorded no event")
			}
			e.clock.Advance(48 * time.Hour)
			report, err := e.svc.Housekeeping.RunOnce(ctx)
			wantErr(t, err, nil)
			if n, _ := reportRows(report, domain.PurgeAuditEvents); n != 0 {
				t.Fatalf("at the retention %d events went; want none", n)
			}
			e.clock.Advance(time.Second)
			report, err = e.svc.Housekeeping.RunOnce(ctx)
			wantErr(t, err, nil)
			n, listed := reportRows(report, domain.PurgeAuditEvents)
			if listed != c.wantKind {
				t.Fatalf("audit events in the report: %v; want %v", listed, c.wantKind)
			}
			want, left := 0, events
			if c.wantKind {
				want, left = events, 0
			}
			if n != want || e.audit.Len() != left {
				t.Fatalf("purged %d events, %d left; want %d purged, %d left", n, e.audit.Len(), want, left)
			}
		})
	}
}

func TestHousekeeping_login_failures_go_once_lapsed(t *testing.T) {
	t.Parallel()
	e := newHousekeepingEnv(t, nil, &purgeCounts{}, nil)
	e.seed(t, "ada@example.com")
	_, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "wrong"})
	wantErr(t, err, domain.ErrInvalidCredentials)
	e.clock.Advance(domain.LoginFailureWindow + domain.PurgeMargin)
	if dry, _ := e.svc.Housekeeping.DryRun(ctx); rowsOf(dry, domain.PurgeLoginAttempts) != 0 {
		t.Fatal("a counter within the window and the margin would go")
	}
	e.clock.Advance(time.Second)
	report, err := e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if n := rowsOf(report, domain.PurgeLoginAttempts); n != 1 {
		t.Fatalf("purged %d counters; want 1", n)
	}
	if a, _ := e.store.LoginAttempts().Get(ctx, "ada@example.com"); a.Failures != 0 {
		t.Errorf("counter after the purge: %+v", a)
	}
}

func rowsOf(r application.PurgeReport, kind domain.PurgeKind) int {
	n, _ := reportRows(r, kind)
	return n
}

func TestHousekeeping_one_node_at_a_time(t *testing.T) {
	t.Parallel()
	lock := memory.NewLock()
	e := newHousekeepingEnv(t, lock, &purgeCounts{}, nil)
	e.seed(t, "ada@example.com")
	login(t, e, "ada@example.com", seededPassword)
	e.clock.Advance(testConfig().RefreshFamilyTTL + 24*time.Hour)
	release, ok, err := lock.TryLock(ctx, "housekeeping")
	if err != nil || !ok {
		t.Fatalf("TryLock = %v, %v", ok, err)
	}
	report, err := e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if !report.Locked || report.Total() != 0 {
		t.Fatalf("while another holds the lock: %+v; want Locked and nothing done", report)
	}
	release()
	report, err = e.svc.Housekeeping.RunOnce(ctx)
	wantErr(t, err, nil)
	if report.Locked || rowsOf(report, domain.PurgeRefreshFamilies) != 1 {
		t.Fatalf("after the release: %+v; want the family purged", report)
	}
}

func TestHousekeeping_run(t *testing.T) {
	t.Parallel()
	t.Run("zero_interval_turns_it_off", func(t *testing.T) {
		t.Parallel()
		e := newHousekeepingEnv(t, nil, &purgeCounts{}, nil) // PurgeInterval 0
		done := make(chan struct{})
		go func() { e.svc.Housekeeping.Run(ctx); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run with PurgeInterval 0 did not return")
		}
	})
	t.Run("passes_at_once_and_stops_with_its_context", func(t *testing.T) {
		t.Parallel()
		counts := &purgeCounts{}
		e := newHousekeepingEnv(t, nil, counts, func(c *application.Config) { c.PurgeInterval = time.Hour })
		e.seed(t, "ada@example.com")
		login(t, e, "ada@example.com", seededPassword)
		e.clock.Advance(testConfig().RefreshFamilyTTL + 24*time.Hour)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { e.svc.Housekeeping.Run(runCtx); close(done) }()
		deadline := time.Now().Add(5 * time.Second)
		for counts.get(domain.PurgeRefreshFamilies) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		if counts.get(domain.PurgeRefreshFamilies) != 1 {
			t.Fatal("the first pass did not purge the family")
		}
		if !strings.Contains(e.logs.String(), "housekeeping purged rows") {
			t.Errorf("no log line of the pass: %s", e.logs.String())
		}
	})
	t.Run("without_a_purger", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, func(_ *application.Config, d *application.Deps) { d.Stores.Purger = nil })
		if _, err := e.svc.Housekeeping.RunOnce(ctx); err == nil {
			t.Error("RunOnce without a purger succeeded")
		}
		e.svc.Housekeeping.Run(ctx) // returns at once
	})
}
