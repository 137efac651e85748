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
	delay := LoginBaseDelay
	for i := LoginFreeFailures; i < a.Failures && delay < LoginMaxDelay; i++ {
		delay *= 2
	}
	delay = min(delay, LoginMaxDelay)
	return a.LastFailureAt.Add(delay)
}

// RetryAfter returns how long a login at now must wait, or 0 when it may
// proceed.
func (a LoginAttempts) RetryAfter(now time.Time) time.Duration {
	if until := a.LockedUntil(); now.Before(until) {
		return until.Sub(now)
	}
	return 0
}
