package gormstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// heardChanges records what SessionEndings tells of accounts.
type heardChanges struct {
	mu      sync.Mutex
	changed map[domain.UserID]int
	live    []bool
}

func hearChanges(e *SessionEndings) *heardChanges {
	h := &heardChanges{changed: map[domain.UserID]int{}}
	e.SubscribeAccounts(func(ids []domain.UserID) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, id := range ids {
			h.changed[id]++
		}
	}, func(up bool) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.live = append(h.live, up)
	})
	return h
}

func (h *heardChanges) times(id domain.UserID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed[id]
}

func (h *heardChanges) states() []bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bool(nil), h.live...)
}

// waitFor waits for cond, failing the test after a generous time: the
// point is that it comes, not how soon (test/multinode times the 1 s).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kit.Eventually(t, 20*time.Second, what, cond)
}

// runEndings runs e until the test ends.
func runEndings(t *testing.T, e *SessionEndings) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Every Update and Delete of a user reaches the other nodes, by NOTIFY on
// PostgreSQL and by the poll on MySQL; a change rolled back does not.
func TestAccountChanges_reach_other_nodes(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *DB{"postgres": openPostgres, "mysql": openMySQL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			// A long poll on PostgreSQL: the notification must carry it.
			poll := 50 * time.Millisecond
			if db.dialect == dialectPostgres {
				poll = time.Hour
			}
			e := NewSessionEndings(db, SessionEndingsOptions{Keep: time.Minute, Poll: poll})
			heard := hearChanges(e)
			runEndings(t, e)
			waitFor(t, "the channel up", func() bool { s := heard.states(); return len(s) == 1 && s[0] })

			users := NewUserRepository(db)
			u := newTestUser(t, users, "changes@example.com")
			if _, err := users.Update(t.Context(), u.ID, func(u *domain.User) error { u.Disabled = true; return nil }); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the update heard", func() bool { return heard.times(u.ID) >= 1 })
			if err := users.Delete(t.Context(), u.ID); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the delete heard", func() bool { return heard.times(u.ID) >= 2 })
		})
	}
}

// When the listen connection drops, the subscribers hear that the
// channel is down (the application empties its cache and stores nothing),
// and that it is up again once the connection is back.
func TestAccountChanges_listener_lost_and_back(t *testing.T) {
	t.Parallel()
	name := "userd_test_listen_" + randomHex(t)[:12]
	dsn := newPostgresSchema(t) + "&application_name=" + name // a URL: withSearchPath
	db, err := Open(DriverPostgres, dsn, Options{MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A long poll: the changes after the reconnection come by NOTIFY (or
	// by the catch-up poll the reconnection asks for), not by the ticker,
	// which would deliver each change again on every poll for PollBack.
	e := NewSessionEndings(db, SessionEndingsOptions{Keep: time.Minute, Poll: time.Hour})
	heard := hearChanges(e)
	runEndings(t, e)
	waitFor(t, "the channel up", func() bool { return len(heard.states()) == 1 })

	admin, err := postgresAdmin()
	if err != nil {
		t.Fatal(err)
	}
	var killed []bool
	err = admin.gorm.Raw(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND query LIKE 'LISTEN%'`, name).
		Scan(&killed).Error
	if err != nil || len(killed) != 1 {
		t.Fatalf("terminate the listen connection: %v, %d terminated", err, len(killed))
	}
	waitFor(t, "down, then up again", func() bool { return len(heard.states()) >= 3 })
	if s := heard.states(); s[0] != true || s[1] != false || s[2] != true {
		t.Fatalf("states heard %v, want up, down, up", s)
	}
	// And it carries changes again.
	users := NewUserRepository(db)
	u := newTestUser(t, users, "back@example.com")
	if err := users.Delete(t.Context(), u.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delete heard", func() bool { return heard.times(u.ID) >= 1 })
}

func newTestUser(t *testing.T, users *UserRepository, email string) domain.User {
	t.Helper()
	now := time.Now()
	u := domain.User{ID: domain.NewUserID(now), Name: "Ada", Email: domain.Email(email), PasswordHash: "x",
		Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: now, UpdatedAt: now}
	if err := users.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}
