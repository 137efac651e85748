package application

import (
	"sync"
	"time"
)

// endedSessions is the set of sessions ended lately, which Authenticate
// consults for every access token: a map lookup under a read lock, so the
// authenticated hot path reads no database. An entry is kept for as long
// as an access token of its session may still verify (the access-token
// lifetime plus the verifier's leeway, counted from when the entry was
// added, which is never before the session's end); after that the token's
// own expiry refuses it, and the entry goes at the next sweep.
type endedSessions struct {
	keep time.Duration

	mu        sync.RWMutex
	until     map[string]time.Time
	lastSweep time.Time
}

func newEndedSessions(keep time.Duration) *endedSessions {
	return &endedSessions{keep: keep, until: make(map[string]time.Time)}
}

// add records that the sessions ended, at now. Every add sweeps expired
// entries once a quarter of keep has passed since the last sweep, so the
// set holds at most the sessions ended within about 1.25 keep.
func (e *endedSessions) add(now time.Time, sids ...string) {
	if len(sids) == 0 {
		return
	}
	until := now.Add(e.keep)
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sid := range sids {
		if sid != "" && until.After(e.until[sid]) {
			e.until[sid] = until
		}
	}
	if now.Sub(e.lastSweep) >= e.keep/4 {
		e.lastSweep = now
		for sid, u := range e.until {
			if !now.Before(u) {
				delete(e.until, sid)
			}
		}
	}
}

// has reports whether the session sid ended. An entry past its time still
// counts until swept: the token it refuses has expired anyway.
func (e *endedSessions) has(sid string) bool {
	if sid == "" {
		return false
	}
	e.mu.RLock()
	_, ok := e.until[sid]
	e.mu.RUnlock()
	return ok
}

// len is the number of entries, swept or not.
func (e *endedSessions) len() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.until)
}
