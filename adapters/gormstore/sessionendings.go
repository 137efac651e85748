package gormstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// SessionEndingsChannel is the PostgreSQL channel that carries ended
// sessions between nodes: each notification's payload is session ids
// separated by commas.
const SessionEndingsChannel = "userd_sessions_ended"

// maxNotifyPayload keeps a payload under PostgreSQL's 8000-byte limit.
const maxNotifyPayload = 7900

// Defaults of SessionEndingsOptions.
const (
	DefaultSessionPoll     = 500 * time.Millisecond
	DefaultSessionPollBack = 5 * time.Second
)

// SessionEndingsOptions tune the catch-up of SessionEndings.
type SessionEndingsOptions struct {
	// Keep is how far back the first poll reads: the access-token
	// lifetime plus the leeway (the sessions whose tokens may still be
	// presented).
	Keep time.Duration
	// Poll is the interval of the catch-up poll; 0 means
	// DefaultSessionPoll.
	Poll time.Duration
	// PollBack is how far before now each poll reads again, for
	// transactions that committed after a later one and for clocks that
	// differ between nodes; 0 means DefaultSessionPollBack.
	PollBack time.Duration
	Logger   *slog.Logger
}

// SessionEndings is the SQL ports.SessionEndings. On PostgreSQL a node
// publishes ended sessions with NOTIFY and hears the others' on a
// connection of its own (LISTEN); a poll of the families revoked lately
// catches up on what a lost notification or a reconnection missed. On
// MySQL, which has no notifications, the poll alone carries them, within
// Poll. On SQLite, a single node's store, it does nothing.
//
// It carries the changes of accounts too (ports.AccountChanges), the
// same ways: a notification on AccountChangesChannel sent at the commit
// of the change, and the poll of account_changes. The channel is up
// (live) while the listen connection is (PostgreSQL), while the polls
// succeed (MySQL), and always on SQLite.
type SessionEndings struct {
	db   *DB
	opts SessionEndingsOptions

	mu              sync.Mutex
	deliver         func([]string)
	accountsChanged func([]domain.UserID)
	accountsLive    func(bool)
	live            bool
	pollNow         chan struct{}
}

var _ ports.SessionEndings = (*SessionEndings)(nil)

// NewSessionEndings returns the session endings of db.
func NewSessionEndings(db *DB, opts SessionEndingsOptions) *SessionEndings {
	if opts.Poll <= 0 {
		opts.Poll = DefaultSessionPoll
	}
	if opts.PollBack <= 0 {
		opts.PollBack = DefaultSessionPollBack
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &SessionEndings{db: db, opts: opts, deliver: func([]string) {},
		accountsChanged: func([]domain.UserID) {}, accountsLive: func(bool) {}, pollNow: make(chan struct{}, 1)}
}

// Subscribe implements ports.SessionEndings.
func (e *SessionEndings) Subscribe(deliver func(sids []string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prev := e.deliver
	e.deliver = func(sids []string) { prev(sids); deliver(sids) }
}

func (e *SessionEndings) send(sids []string) { fanOut(&e.mu, &e.deliver, sids) }

// fanOut calls the subscribers' function that *fn holds (read under mu,
// as Subscribe changes it) with items, unless there are none.
func fanOut[T any](mu *sync.Mutex, fn *func([]T), items []T) {
	if len(items) == 0 {
		return
	}
	mu.Lock()
	f := *fn
	mu.Unlock()
	f(items)
}

// Publish implements ports.SessionEndings: on PostgreSQL, one NOTIFY per
// batch of ids that fits a payload; nothing elsewhere (the other MySQL
// nodes hear of the ids by their poll).
func (e *SessionEndings) Publish(ctx context.Context, sids []string) error {
	if e.db.dialect != dialectPostgres {
		return nil
	}
	for len(sids) > 0 {
		n, size := 0, 0
		for n < len(sids) && size+len(sids[n])+1 <= maxNotifyPayload {
			size += len(sids[n]) + 1
			n++
		}
		if n == 0 { // an id longer than a payload: not one of ours
			sids = sids[1:]
			continue
		}
		payload := strings.Join(sids[:n], ",")
		if err := e.db.gorm.WithContext(ctx).Exec("SELECT pg_notify(?, ?)", SessionEndingsChannel, payload).Error; err != nil {
			return storeError("publish ended sessions", err)
		}
		sids = sids[n:]
	}
	return nil
}

// CatchUp delivers the sessions ended within Keep before now, at start,
// before the node serves: a node that starts (or restarts, on SQLite the
// only node) must refuse the access tokens of sessions ended while it was
// away, which no message will tell it about.
func (e *SessionEndings) CatchUp(ctx context.Context) error {
	return e.pollOnce(ctx, time.Now().Add(-e.opts.Keep))
}

// Run listens and polls until ctx ends; on MySQL, which has no
// notifications, it polls only; on SQLite, where this node ends every
// session and changes every account itself and CatchUp has read the
// sessions of earlier runs, it says the account channel is live and
// returns at once.
func (e *SessionEndings) Run(ctx context.Context) {
	switch e.db.dialect {
	case dialectSQLite:
		e.setAccountsLive(true)
		return
	case dialectMySQL:
		e.poll(ctx)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.listen(ctx) })
	e.poll(ctx)
	wg.Wait()
}

// listen keeps a LISTEN connection, reconnecting after a second when it
// fails; each (re)connection asks the poll to catch up at once.
func (e *SessionEndings) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := e.listenOnce(ctx)
		e.setAccountsLive(false)
		if ctx.Err() != nil {
			return
		}
		e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "session endings: listen connection lost; reconnecting",
			slog.String("error", err.Error()))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (e *SessionEndings) listenOnce(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, e.db.dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+SessionEndingsChannel+"; LISTEN "+AccountChangesChannel); err != nil {
		return err
	}
	// Every change that commits from now on is notified on this
	// connection: the account cache may store what is read from now on.
	e.setAccountsLive(true)
	select {
	case e.pollNow <- struct{}{}:
	default:
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == AccountChangesChannel {
			e.sendAccounts([]domain.UserID{domain.UserID(n.Payload)})
			continue
		}
		e.send(strings.Split(n.Payload, ","))
	}
}

// poll reads, every Poll, the families revoked and the accounts changed
// since PollBack before the last poll (the first poll: the families
// since Keep ago, the accounts since the start, none being cached
// before). On MySQL the account channel is live while the polls succeed.
func (e *SessionEndings) poll(ctx context.Context) {
	start := time.Now()
	since, accountsSince := start.Add(-e.opts.Keep), start.Add(-e.opts.PollBack)
	var trimmed time.Time
	t := time.NewTicker(e.opts.Poll)
	defer t.Stop()
	for {
		started := time.Now()
		err := e.pollOnce(ctx, since)
		if err == nil {
			err = e.pollAccounts(ctx, accountsSince)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if e.db.dialect == dialectMySQL {
				e.setAccountsLive(false)
			}
			e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "session endings: catch-up poll failed", slog.String("error", err.Error()))
		} else {
			since, accountsSince = started.Add(-e.opts.PollBack), started.Add(-e.opts.PollBack)
			if e.db.dialect == dialectMySQL {
				e.setAccountsLive(true)
			}
			e.trimAccountChanges(ctx, &trimmed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.pollNow:
		}
	}
}

func (e *SessionEndings) pollOnce(ctx context.Context, since time.Time) error {
	var ids []string
	err := e.db.read.WithContext(ctx).Model(&refreshFamilyRow{}).
		Where("revoked_at > ?", toMicros(since)).Pluck("id", &ids).Error
	if err != nil {
		return fmt.Errorf("poll ended sessions: %w", err)
	}
	e.send(ids)
	return nil
}
