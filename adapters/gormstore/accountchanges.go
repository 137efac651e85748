package gormstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AccountChangesChannel is the PostgreSQL channel that tells the nodes of
// a change of an account: each notification's payload is one user id.
const AccountChangesChannel = "userd_accounts_changed"

// accountChangesKeep is how long the rows of account_changes are kept:
// the poll reads PollBack (seconds) back; the hour is the margin for
// clocks that differ between nodes, as domain.PurgeMargin is.
const accountChangesKeep = time.Hour

// accountChangesTrimEvery is how often a node's poll deletes the rows
// older than accountChangesKeep. Every node does, and a delete that
// finds nothing costs an index probe.
const accountChangesTrimEvery = time.Minute

var _ ports.AccountChanges = (*SessionEndings)(nil)

// recordAccountChange records, in tx (the transaction of the change), that
// the account id changed: a row of account_changes, which the other nodes'
// poll reads, and on PostgreSQL a notification, which the server sends to
// the listening nodes only if and when tx commits. A SQLite store is one
// process, whose application drops its own entry: nothing to record.
func (db *DB) recordAccountChange(tx *gorm.DB, id domain.UserID) error {
	if db.dialect == dialectSQLite {
		return nil
	}
	err := tx.Exec("INSERT INTO account_changes (user_id, changed_at) VALUES (?, ?)", string(id), toMicros(time.Now())).Error
	if err != nil || db.dialect != dialectPostgres {
		return err
	}
	return tx.Exec("SELECT pg_notify(?, ?)", AccountChangesChannel, string(id)).Error
}

// SubscribeAccounts implements ports.AccountChanges.
func (e *SessionEndings) SubscribeAccounts(changed func(ids []domain.UserID), live func(up bool)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	prevChanged, prevLive := e.accountsChanged, e.accountsLive
	e.accountsChanged = func(ids []domain.UserID) { prevChanged(ids); changed(ids) }
	e.accountsLive = func(up bool) { prevLive(up); live(up) }
}

func (e *SessionEndings) sendAccounts(ids []domain.UserID) { fanOut(&e.mu, &e.accountsChanged, ids) }

// setAccountsLive tells the subscribers when the channel comes up or goes
// down, once per change of state.
func (e *SessionEndings) setAccountsLive(up bool) {
	e.mu.Lock()
	if e.live == up {
		e.mu.Unlock()
		return
	}
	e.live = up
	live := e.accountsLive
	e.mu.Unlock()
	if !up {
		e.opts.Logger.Warn("account changes: channel down; the account cache is emptied and off until it is back")
	}
	live(up)
}

// pollAccounts delivers the accounts changed since since.
func (e *SessionEndings) pollAccounts(ctx context.Context, since time.Time) error {
	var ids []string
	err := e.db.read.WithContext(ctx).Table("account_changes").
		Where("changed_at > ?", toMicros(since)).Distinct().Pluck("user_id", &ids).Error
	if err != nil {
		return fmt.Errorf("poll account changes: %w", err)
	}
	changed := make([]domain.UserID, len(ids))
	for i, id := range ids {
		changed[i] = domain.UserID(id)
	}
	e.sendAccounts(changed)
	return nil
}

// trimAccountChanges deletes the rows of account_changes no poll will read
// again, once per accountChangesTrimEvery; last is when it last did.
func (e *SessionEndings) trimAccountChanges(ctx context.Context, last *time.Time) {
	if time.Since(*last) < accountChangesTrimEvery {
		return
	}
	*last = time.Now()
	err := e.db.gorm.WithContext(ctx).Exec("DELETE FROM account_changes WHERE changed_at < ?",
		toMicros(time.Now().Add(-accountChangesKeep))).Error
	if err != nil && ctx.Err() == nil {
		e.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "account changes: trim failed", slog.String("error", err.Error()))
	}
}
