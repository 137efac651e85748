package domain

import "time"

// Login throttling policy of the contract: after LoginFreeFailures failures
// in a row, every attempt is refused for a delay starting at
// LoginBaseDelay and doubling with each further failure up to
// LoginMaxDelay. A success resets the count; so does LoginFailureWindow
// without a failure.
const (
	LoginFreeFailures  = 5
	LoginBaseDelay     = 30 * time.Second
	LoginMaxDelay      = 15 * time.Minute
	LoginFailureWindow = 24 * time.Hour
)

// LoginDelay returns how long password checks for an email are refused
// after its last failure, given the failures counted in a row: nothing for
// the first LoginFreeFailures, then LoginBaseDelay, doubling with each
// further failure up to LoginMaxDelay. It never decreases as failures grow
// and reaches LoginMaxDelay after finitely many steps, which is what lets
// a store turn it into a table (adapters/gormstore evaluates it in SQL).
func LoginDelay(failures int) time.Duration {
	if failures < LoginFreeFailures {
		return 0
	}
	delay := LoginBaseDelay
	for i := LoginFreeFailures; i < failures && delay < LoginMaxDelay; i++ {
		delay *= 2
	}
	return min(delay, LoginMaxDelay)
}

// LoginAttempts is the failure record of one normalised email, whether or
// not a user has it.
type LoginAttempts struct {
	Email         Email
	Failures      int
	LastFailureAt time.Time
}

// LockedUntil returns the time before which logins for the email are
// refused, or the zero time when they are not.
func (a LoginAttempts) LockedUntil() time.Time {
	if a.Failures < LoginFreeFailures {
		return time.Time{}
	}
	return a.LastFailureAt.Add(LoginDelay(a.Failures))
}

// RetryAfter returns how long a login at now must wait, or 0 when it may
// proceed.
func (a LoginAttempts) RetryAfter(now time.Time) time.Duration {
	if until := a.LockedUntil(); now.Before(until) {
		return until.Sub(now)
	}
	return 0
}

// Lapsed reports whether the failures are forgotten at now: the last one
// is more than LoginFailureWindow old.
func (a LoginAttempts) Lapsed(now time.Time) bool {
	return a.LastFailureAt.Before(now.Add(-LoginFailureWindow))
}

// Reserve applies the reservation of one password check at time at to the
// record: the rule that every store implements atomically
// (ports.LoginAttemptStore.Reserve). Unless the email is locked, the check
// is counted as a failure before the password is even looked at (a right
// password resets the count afterwards), so that any number of concurrent
// checks find the budget already spent; the count restarts at 1 when the
// failures have lapsed. The last failure time never moves backwards, so
// that a node whose clock lags cannot shorten a lock-out. While the email
// is locked, the record is returned unchanged with the wait, and nothing
// is counted: refused attempts do not count.
func (a LoginAttempts) Reserve(at time.Time) (next LoginAttempts, wait time.Duration) {
	switch {
	case a.Lapsed(at):
		return LoginAttempts{Email: a.Email, Failures: 1, LastFailureAt: at}, 0
	case a.RetryAfter(at) > 0:
		return a, a.RetryAfter(at)
	}
	a.Failures++
	if at.After(a.LastFailureAt) {
		a.LastFailureAt = at
	}
	return a, 0
}
