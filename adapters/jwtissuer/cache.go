package jwtissuer

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"github.com/userd/userd/domain"
)

// verifiedCacheSize bounds the verified-token cache: at most this many
// entries (about 100 bytes each), so a flood of distinct tokens cannot grow
// memory without bound.
const verifiedCacheSize = 10_000

// verifiedCache remembers the principal of tokens whose signature and
// claims were verified, keyed by the SHA-256 of the token, until the
// token's exp. Verifying an EdDSA signature costs about 50 µs, more than
// the rest of a read; a cached token costs a hash and a map lookup.
//
// It changes no revocation rule: a token leaves the cache at its exp (the
// leeway past exp is granted only by a full verification), a key is only
// retired once every token it signed has expired, and whether the user
// still exists with the token's profiles is checked by the application on
// every request, cached or not.
type verifiedCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cachedPrincipal
}

type cachedPrincipal struct {
	principal domain.Principal
	until     time.Time
}

func newVerifiedCache() *verifiedCache {
	return &verifiedCache{entries: make(map[[32]byte]cachedPrincipal)}
}

// get returns the principal of a token verified before and not yet expired.
func (c *verifiedCache) get(token string, now time.Time) (domain.Principal, bool) {
	key := sha256.Sum256([]byte(token))
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return domain.Principal{}, false
	}
	// The caller may keep or change the slice; the cached one stays intact.
	p := e.principal
	p.Profiles = slices.Clone(p.Profiles)
	return p, true
}

// put remembers a verified token until until. When full, expired entries
// go first, and if none has expired, everything: a flood of valid tokens
// then costs full verifications, never memory.
func (c *verifiedCache) put(token string, p domain.Principal, until, now time.Time) {
	if !now.Before(until) {
		return
	}
	key := sha256.Sum256([]byte(token))
	p.Profiles = slices.Clone(p.Profiles)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= verifiedCacheSize {
		for k, e := range c.entries {
			if !now.Before(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= verifiedCacheSize {
			clear(c.entries)
		}
	}
	c.entries[key] = cachedPrincipal{principal: p, until: until}
}
