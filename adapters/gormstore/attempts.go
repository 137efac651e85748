package gormstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// reserveSQL is domain.LoginAttempts.Reserve as one statement, so that
// reservations from any number of instances are decided one at a time by
// the database, without a transaction: an upsert whose update runs only
// when the email is not locked, and returns the row only then. The upsert
// syntax (ON CONFLICT … DO UPDATE … WHERE, RETURNING) is shared by SQLite
// (3.35+) and PostgreSQL; on PostgreSQL the conflicting row is locked and
// the WHERE evaluated on its latest version, so concurrent reservations
// queue on the row rather than reading a stale count.
//
// The policy is the domain's, written out from its constants and from
// domain.LoginDelay when the package loads (lockedSQL), never copied: the
// count restarts when the last failure is more than the window old; the
// email is locked while the time is before the last failure plus the
// delay of the count; last_failure_at never moves backwards, so a failure
// reported late by an instance whose clock lags cannot shorten a lock-out.
// excluded.last_failure_at is the time of the reservation.
var reserveSQL = fmt.Sprintf(`
INSERT INTO login_attempts (email, failures, last_failure_at) VALUES (?, 1, ?)
ON CONFLICT (email) DO UPDATE SET
	failures = CASE WHEN %[1]s THEN 1 ELSE login_attempts.failures + 1 END,
	last_failure_at = CASE WHEN login_attempts.last_failure_at > excluded.last_failure_at
	                       THEN login_attempts.last_failure_at
	                       ELSE excluded.last_failure_at END
WHERE %[1]s OR NOT (%[2]s)
RETURNING email, failures, last_failure_at`,
	lapsedSQL("login_attempts.last_failure_at", "excluded.last_failure_at"),
	lockedSQL("login_attempts.failures", "login_attempts.last_failure_at", "excluded.last_failure_at"))

// lapsedSQL is domain.LoginAttempts.Lapsed: the last failure is more than
// the failure window before now.
func lapsedSQL(last, now string) string {
	return fmt.Sprintf("%s < %s - %d", last, now, domain.LoginFailureWindow.Microseconds())
}

// lockedSQL is the condition of domain.LoginAttempts.RetryAfter being
// positive, with domain.LoginDelay unrolled into a CASE over the count
// (times are microseconds): FALSE while the delay is zero, then now before
// the last failure plus the delay, step by step up to the maximum. It
// panics when LoginDelay does not reach LoginMaxDelay within 64 failures
// or decreases, which TestLockedSQL would show first.
func lockedSQL(failures, last, now string) string {
	var b strings.Builder
	b.WriteString("CASE")
	prev := domain.LoginDelay(0)
	step := func(d time.Duration) string {
		if d == 0 {
			return "FALSE"
		}
		return fmt.Sprintf("%s < %s + %d", now, last, d.Microseconds())
	}
	for f := 1; prev < domain.LoginMaxDelay; f++ {
		if f > 64 {
			panic("gormstore: domain.LoginDelay does not reach LoginMaxDelay")
		}
		d := domain.LoginDelay(f)
		if d < prev {
			panic("gormstore: domain.LoginDelay decreases")
		}
		if d != prev {
			fmt.Fprintf(&b, " WHEN %s < %d THEN %s", failures, f, step(prev))
			prev = d
		}
	}
	fmt.Fprintf(&b, " ELSE %s END", step(prev))
	return b.String()
}

// Reserve implements ports.LoginAttemptStore. A refused reservation
// writes nothing; a second statement then reads the record to tell the
// caller how long to wait. Should the lock have ended between the two (a
// success elsewhere reset it, its delay ran out), the reservation is tried
// again.
func (s *LoginAttemptStore) Reserve(ctx context.Context, email domain.Email, at time.Time) (domain.LoginAttempts, error) {
	if s.db.dialect == dialectMySQL {
		// Other steps, not only other SQL: a read locked, the domain's
		// policy applied, a write (see mysqlReserve).
		return s.mysqlReserve(ctx, email, at)
	}
	for range 3 {
		var rows []loginAttemptRow
		err := s.db.writer(ctx).Raw(reserveSQL, string(email), toMicros(at)).Scan(&rows).Error
		if err != nil {
			return domain.LoginAttempts{}, storeError("reserve login attempt", err)
		}
		if len(rows) == 1 {
			return toDomainLoginAttempts(rows[0]), nil
		}
		var row loginAttemptRow
		err = s.db.reader(ctx).Where("email = ?", string(email)).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			continue
		}
		if err != nil {
			return domain.LoginAttempts{}, storeError("login attempts", err)
		}
		if wait := toDomainLoginAttempts(row).RetryAfter(at); wait > 0 {
			return domain.LoginAttempts{}, &domain.TooManyAttemptsError{RetryAfter: wait}
		}
	}
	// Three races in a row: the email is contended; the lock-out is
	// surely near. Refuse this one for a second.
	return domain.LoginAttempts{}, &domain.TooManyAttemptsError{RetryAfter: time.Second}
}

// Release implements ports.LoginAttemptStore.
func (s *LoginAttemptStore) Release(ctx context.Context, email domain.Email) error {
	err := s.db.writer(ctx).Model(&loginAttemptRow{}).
		Where("email = ? AND failures > 0", string(email)).
		UpdateColumn("failures", gorm.Expr("failures - 1")).Error
	return storeError("release login attempt", err)
}

// Reset implements ports.LoginAttemptStore.
func (s *LoginAttemptStore) Reset(ctx context.Context, email domain.Email) error {
	err := s.db.writer(ctx).Where("email = ?", string(email)).Delete(&loginAttemptRow{}).Error
	return storeError("reset login attempts", err)
}

// mysqlReserve is Reserve on MySQL, whose upsert has neither a WHERE nor
// RETURNING (and assigns its columns one after the other, each seeing the
// ones before): the record is read locked, domain.LoginAttempts.Reserve
// applied to it, and the result written, in one transaction. Concurrent
// reservations of one email queue on the row lock, and each reads the
// record the one before wrote. Of two first reservations of an email,
// which find no row to lock, one inserts and the other's insert is
// refused as a duplicate: it starts again, and finds the row.
func (s *LoginAttemptStore) mysqlReserve(ctx context.Context, email domain.Email, at time.Time) (domain.LoginAttempts, error) {
	at = fromMicros(toMicros(at)) // what the column keeps
	for range 3 {
		var (
			next domain.LoginAttempts
			wait time.Duration
		)
		err := s.db.transaction(ctx, func(tx *gorm.DB) error {
			var rows []loginAttemptRow
			err := tx.Raw(`SELECT email, failures, last_failure_at FROM login_attempts WHERE email = ? FOR UPDATE`, string(email)).
				Scan(&rows).Error
			if err != nil {
				return err
			}
			if len(rows) == 0 {
				next, wait = domain.LoginAttempts{Email: email, Failures: 1, LastFailureAt: at}, 0
				return tx.Create(&loginAttemptRow{Email: string(email), Failures: 1, LastFailureMicros: toMicros(at)}).Error
			}
			if next, wait = toDomainLoginAttempts(rows[0]).Reserve(at); wait > 0 {
				return nil
			}
			return tx.Model(&loginAttemptRow{}).Where("email = ?", string(email)).
				Updates(map[string]any{"failures": next.Failures, "last_failure_at": toMicros(next.LastFailureAt)}).Error
		})
		switch {
		case errors.Is(err, gorm.ErrDuplicatedKey):
			continue
		case err != nil:
			return domain.LoginAttempts{}, storeError("reserve login attempt", err)
		case wait > 0:
			return domain.LoginAttempts{}, &domain.TooManyAttemptsError{RetryAfter: wait}
		}
		return next, nil
	}
	// As in Reserve: the email is contended.
	return domain.LoginAttempts{}, &domain.TooManyAttemptsError{RetryAfter: time.Second}
}
