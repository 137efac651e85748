package gormstore

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// LoginAttemptStore is the SQL ports.LoginAttemptStore, shared by every
// instance using the database.
type LoginAttemptStore struct{ db *DB }

var _ ports.LoginAttemptStore = (*LoginAttemptStore)(nil)

// NewLoginAttemptStore returns the login-attempt store of db.
func NewLoginAttemptStore(db *DB) *LoginAttemptStore { return &LoginAttemptStore{db: db} }

// Get implements ports.LoginAttemptStore.
func (s *LoginAttemptStore) Get(ctx context.Context, email domain.Email) (domain.LoginAttempts, error) {
	var row loginAttemptRow
	err := s.db.read.WithContext(ctx).Where("email = ?", string(email)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.LoginAttempts{Email: email}, nil
	}
	if err != nil {
		return domain.LoginAttempts{}, storeError("login attempts", err)
	}
	return toDomainLoginAttempts(row), nil
}

// recordFailureSQL counts a failure in one statement, so concurrent
// failures from any number of instances are all counted without a
// transaction. The upsert syntax is shared by SQLite (3.35+, for
// RETURNING) and PostgreSQL. The count restarts when the previous failure
// is older than the window; last_failure_at never moves backwards, so a
// failure reported late by an instance whose clock lags cannot shorten a
// lock-out.
const recordFailureSQL = `
INSERT INTO login_attempts (email, failures, last_failure_at) VALUES (?, 1, ?)
ON CONFLICT (email) DO UPDATE SET
	failures = CASE WHEN login_attempts.last_failure_at < ? THEN 1
	                ELSE login_attempts.failures + 1 END,
	last_failure_at = CASE WHEN login_attempts.last_failure_at > excluded.last_failure_at
	                       THEN login_attempts.last_failure_at
	                       ELSE excluded.last_failure_at END
RETURNING email, failures, last_failure_at`

// RecordFailure implements ports.LoginAttemptStore.
func (s *LoginAttemptStore) RecordFailure(ctx context.Context, email domain.Email, at time.Time, window time.Duration) (domain.LoginAttempts, error) {
	var rows []loginAttemptRow
	err := s.db.gorm.WithContext(ctx).
		Raw(recordFailureSQL, string(email), toMicros(at), toMicros(at.Add(-window))).
		Scan(&rows).Error
	if err != nil {
		return domain.LoginAttempts{}, storeError("record login failure", err)
	}
	if len(rows) != 1 {
		return domain.LoginAttempts{}, storeError("record login failure", errors.New("upsert returned no row"))
	}
	return toDomainLoginAttempts(rows[0]), nil
}

// Reset implements ports.LoginAttemptStore.
func (s *LoginAttemptStore) Reset(ctx context.Context, email domain.Email) error {
	err := s.db.gorm.WithContext(ctx).Where("email = ?", string(email)).Delete(&loginAttemptRow{}).Error
	return storeError("reset login attempts", err)
}
