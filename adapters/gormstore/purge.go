package gormstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// purgeRule is the SQL of one domain.PurgeKind: the table, and the
// condition of a stale row with its arguments (each the cutoff in
// microseconds, n of them). Every condition is served by an index
// (migration 16 adds those that were missing, 19 oauth_auth_requests'
// expires_at, 22 personal_tokens' expires_at and revoked_at, one for each
// side of the OR), so that a batch reads
// only the rows it deletes; outbox_messages has none, being a table of
// the few messages waiting, which a scan reads at once.
type purgeRule struct {
	table string
	// pk is the primary key, which the batch's DELETE may name
	// (dialect.deleteSomeSQL).
	pk    string
	where string
	args  int
}

var purgeRules = map[domain.PurgeKind]purgeRule{
	// The tokens go with their family: ON DELETE CASCADE, served by
	// refresh_tokens_family_id_idx.
	domain.PurgeRefreshFamilies:   {"refresh_families", "id", "expires_at < ?", 1},
	domain.PurgeLinkTokens:        {"link_tokens", "hash", "created_at < ? AND (used_at IS NOT NULL OR expires_at < ?)", 2},
	domain.PurgeMFAChallenges:     {"mfa_challenges", "hash", "expires_at < ?", 1},
	domain.PurgePasskeyCeremonies: {"passkey_ceremonies", "id", "expires_at < ?", 1},
	domain.PurgeAuthRequests:      {"oauth_auth_requests", "id", "expires_at < ? AND (code_expires_at IS NULL OR code_expires_at < ?)", 2},
	domain.PurgeLoginAttempts:     {"login_attempts", "email", "last_failure_at < ?", 1},
	domain.PurgeOutboxMessages:    {"outbox_messages", "id", "created_at < ?", 1},
	domain.PurgePersonalTokens:    {"personal_tokens", "id", "expires_at < ? OR revoked_at < ?", 2},
	domain.PurgeAuditEvents:       {"audit_events", "id", "occurred_at < ?", 1},
}

// Purger is the SQL ports.Purger.
type Purger struct{ db *DB }

var _ ports.Purger = (*Purger)(nil)

// NewPurger returns the purger of db.
func NewPurger(db *DB) *Purger { return &Purger{db: db} }

func (p *Purger) rule(kind domain.PurgeKind, cutoff time.Time) (purgeRule, []any, error) {
	r, ok := purgeRules[kind]
	if !ok {
		return purgeRule{}, nil, fmt.Errorf("purge: unknown kind %q", kind)
	}
	args := make([]any, r.args)
	for i := range args {
		args[i] = toMicros(cutoff)
	}
	return r, args, nil
}

// Purge implements ports.Purger with one DELETE of at most limit rows
// (dialect.deleteSomeSQL): a statement is its own transaction, short
// enough not to hold SQLite's one writer for long.
func (p *Purger) Purge(ctx context.Context, kind domain.PurgeKind, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	r, args, err := p.rule(kind, cutoff)
	if err != nil {
		return 0, err
	}
	// The table and column names are the constants above, never input.
	q := p.db.dialect.deleteSomeSQL(r.table, r.pk, r.where)
	res := p.db.writer(ctx).Exec(q, append(args, limit)...)
	if res.Error != nil {
		return 0, storeError("purge "+string(kind), res.Error)
	}
	return int(res.RowsAffected), nil
}

// CountPurgeable implements ports.Purger.
func (p *Purger) CountPurgeable(ctx context.Context, kind domain.PurgeKind, cutoff time.Time) (int, error) {
	r, args, err := p.rule(kind, cutoff)
	if err != nil {
		return 0, err
	}
	var n int64
	q := fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE %s", r.table, r.where)
	if err := p.db.reader(ctx).Raw(q, args...).Scan(&n).Error; err != nil {
		return 0, storeError("count purgeable "+string(kind), err)
	}
	return int(n), nil
}

// createAfterExpired stores row in a transaction that first deletes the
// rows of its table (R's, which has an expires_at column) that expired at
// or before createdAt (Unix microseconds): rows that anyone may make (a
// login's challenge, a passkey ceremony) and nothing can use once
// expired, so that the table holds minutes of them whatever the
// housekeeping's schedule. It returns domain.ErrUserNotFound when the
// row's user does not exist (deleted meanwhile, say); op names the work
// in errors.
func createAfterExpired[R any](ctx context.Context, db *DB, op string, row *R, createdAt int64) error {
	err := db.transaction(ctx, func(tx *gorm.DB) error {
		if err := tx.Where("expires_at <= ?", createdAt).Delete(new(R)).Error; err != nil {
			return err
		}
		return tx.Create(row).Error
	})
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("%s: %w", op, domain.ErrUserNotFound)
	}
	return storeError(op, err)
}

// Lock is the SQL ports.Lock. On PostgreSQL it is a session-level
// advisory lock, keyed by the name and the schema (as lastAdminLockSQL
// is), held on a connection of its own until released: a node that dies
// loses its connection, and the lock with it. On MySQL it is a named lock
// (GET_LOCK), keyed by the name and the database, likewise held on a
// connection of its own. On SQLite, whose database one process serves, it
// is a lock within the process.
type Lock struct {
	db *DB

	mu   sync.Mutex
	held map[string]bool
}

var _ ports.Lock = (*Lock)(nil)

// NewLock returns the lock of db.
func NewLock(db *DB) *Lock { return &Lock{db: db, held: make(map[string]bool)} }

// unlockTimeout bounds the release of an advisory lock.
const unlockTimeout = time.Second

// TryLock implements ports.Lock. SQLite's branch is a lock of another
// kind, in the process; the others hold the server's
// (dialect.trySessionLock) on a connection taken from the pool.
func (l *Lock) TryLock(ctx context.Context, name string) (func(), bool, error) {
	if l.db.dialect == dialectSQLite {
		return l.tryLocal(name)
	}
	sqlDB, err := l.db.gorm.DB()
	if err != nil {
		return nil, false, err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return nil, false, storeError("lock "+name, err)
	}
	ok, err := l.db.dialect.trySessionLock(ctx, conn, name)
	if err != nil || !ok {
		_ = conn.Close()
		return nil, false, storeError("lock "+name, err)
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			if ctx.Err() != nil {
				// The node is stopping: no round trip that could hold up
				// its shutdown. Dropping the connection ends its session,
				// and PostgreSQL releases a session's advisory locks with
				// it (MySQL its named locks).
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				_ = conn.Close()
				return
			}
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
			defer cancel()
			unlocked, err := l.db.dialect.unlockSession(uctx, conn, name)
			if err != nil || !unlocked {
				// The session may still hold the lock: the connection
				// must not go back to the pool, where it would keep it.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			_ = conn.Close()
		})
	}
	return release, true, nil
}

func (l *Lock) tryLocal(name string) (func(), bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] {
		return nil, false, nil
	}
	l.held[name] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.held, name)
			l.mu.Unlock()
		})
	}, true, nil
}
