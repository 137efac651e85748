package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Purger is the in-memory ports.Purger, over a store and its audit log
// (which keeps a lock of its own).
type Purger struct {
	s     *Store
	audit *AuditLog
}

var _ ports.Purger = (*Purger)(nil)

// NewPurger returns the purger of s and audit; audit may be nil when
// events are not kept.
func NewPurger(s *Store, audit *AuditLog) *Purger { return &Purger{s: s, audit: audit} }

// Purge implements ports.Purger.
func (p *Purger) Purge(ctx context.Context, kind domain.PurgeKind, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if kind == domain.PurgeAuditEvents {
		return p.purgeAudit(cutoff, limit), nil
	}
	s := p.s
	defer s.lock(ctx)()
	stale, err := s.stale(kind, cutoff)
	if err != nil {
		return 0, err
	}
	stale = stale[:min(limit, len(stale))]
	for _, key := range stale {
		s.drop(kind, key)
	}
	return len(stale), nil
}

// CountPurgeable implements ports.Purger.
func (p *Purger) CountPurgeable(ctx context.Context, kind domain.PurgeKind, cutoff time.Time) (int, error) {
	if kind == domain.PurgeAuditEvents {
		return p.countAudit(cutoff), nil
	}
	s := p.s
	defer s.lock(ctx)()
	stale, err := s.stale(kind, cutoff)
	return len(stale), err
}

// staleKey is a row to purge, with the time that orders the purge (the
// oldest first, as the SQL store's index gives them).
type staleKey struct {
	key string
	at  time.Time
}

// stale returns the keys of the rows of kind stale before cutoff, oldest
// first, under the store's lock.
func (s *Store) stale(kind domain.PurgeKind, cutoff time.Time) ([]string, error) {
	cutoff = normTime(cutoff)
	var keys []staleKey
	switch kind {
	case domain.PurgeRefreshFamilies:
		for id, f := range s.families {
			if f.ExpiresAt.Before(cutoff) {
				keys = append(keys, staleKey{id, f.ExpiresAt})
			}
		}
	case domain.PurgeLinkTokens:
		for h, t := range s.links {
			if t.CreatedAt.Before(cutoff) && (t.UsedAt != nil || t.ExpiresAt.Before(cutoff)) {
				keys = append(keys, staleKey{h, t.CreatedAt})
			}
		}
	case domain.PurgeMFAChallenges:
		for h, c := range s.challenges {
			if c.ExpiresAt.Before(cutoff) {
				keys = append(keys, staleKey{h, c.ExpiresAt})
			}
		}
	case domain.PurgePasskeyCeremonies:
		for id, c := range s.ceremonies {
			if c.ExpiresAt.Before(cutoff) {
				keys = append(keys, staleKey{id, c.ExpiresAt})
			}
		}
	case domain.PurgeAuthRequests:
		for id, r := range s.authRequests {
			// A request's code may outlive it (one made just before its
			// end): both must be past.
			if r.ExpiresAt.Before(cutoff) && (r.CodeExpiresAt.IsZero() || r.CodeExpiresAt.Before(cutoff)) {
				keys = append(keys, staleKey{id, r.ExpiresAt})
			}
		}
	case domain.PurgeLoginAttempts:
		for e, a := range s.attempts {
			if a.LastFailureAt.Before(cutoff) {
				keys = append(keys, staleKey{string(e), a.LastFailureAt})
			}
		}
	case domain.PurgeOutboxMessages:
		for id, e := range s.outbox {
			if e.m.CreatedAt.Before(cutoff) {
				keys = append(keys, staleKey{string(id), e.m.CreatedAt})
			}
		}
	case domain.PurgePersonalTokens:
		for id, t := range s.personalTokens {
			ended := t.ExpiresAt
			if t.RevokedAt != nil && t.RevokedAt.Before(ended) {
				ended = *t.RevokedAt
			}
			if ended.Before(cutoff) {
				keys = append(keys, staleKey{string(id), ended})
			}
		}
	default:
		return nil, fmt.Errorf("purge: unknown kind %q", kind)
	}
	slices.SortFunc(keys, func(a, b staleKey) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.key, b.key))
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.key
	}
	return out, nil
}

// drop deletes the row of kind with the key, under the store's lock; a
// family goes with its tokens.
func (s *Store) drop(kind domain.PurgeKind, key string) {
	switch kind {
	case domain.PurgeRefreshFamilies:
		delete(s.families, key)
		for h, t := range s.tokens {
			if t.FamilyID == key {
				delete(s.tokens, h)
			}
		}
	case domain.PurgeLinkTokens:
		delete(s.links, key)
	case domain.PurgeMFAChallenges:
		delete(s.challenges, key)
	case domain.PurgePasskeyCeremonies:
		delete(s.ceremonies, key)
	case domain.PurgeAuthRequests:
		delete(s.authRequests, key)
	case domain.PurgeLoginAttempts:
		delete(s.attempts, domain.Email(key))
	case domain.PurgeOutboxMessages:
		delete(s.outbox, domain.OutboxID(key))
	case domain.PurgePersonalTokens:
		delete(s.personalTokens, domain.PersonalTokenID(key))
	}
}

// purgeAudit deletes up to limit events that occurred before cutoff, the
// oldest first.
func (p *Purger) purgeAudit(cutoff time.Time, limit int) int {
	if p.audit == nil {
		return 0
	}
	cutoff = normTime(cutoff)
	l := p.audit
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	l.events = slices.DeleteFunc(l.events, func(e domain.AuditEvent) bool {
		if n < limit && e.Time.Before(cutoff) {
			n++
			return true
		}
		return false
	})
	return n
}

func (p *Purger) countAudit(cutoff time.Time) int {
	if p.audit == nil {
		return 0
	}
	cutoff = normTime(cutoff)
	l := p.audit
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Time.Before(cutoff) {
			n++
		}
	}
	return n
}

// Lock is the in-memory ports.Lock: the store lives in one process, so a
// lock within the process is a lock for every user of the store.
type Lock struct {
	mu   sync.Mutex
	held map[string]bool
}

var _ ports.Lock = (*Lock)(nil)

// NewLock returns a lock with no name held.
func NewLock() *Lock { return &Lock{held: make(map[string]bool)} }

// TryLock implements ports.Lock.
func (l *Lock) TryLock(_ context.Context, name string) (func(), bool, error) {
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
