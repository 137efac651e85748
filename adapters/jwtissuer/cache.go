package jwtissuer

import (
	"crypto/sha256"
	"slices"
	"time"
	"unsafe"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/userd/userd/domain"
)

// verifiedCacheSize bounds the verified-token cache: at most this many
// entries (about 200 bytes each with the LRU's bookkeeping), so a flood of
// distinct tokens cannot grow memory without bound.
const verifiedCacheSize = 10_000

// verifiedCache remembers the principal of tokens whose signature and
// claims were verified, keyed by the SHA-256 of the token, until the
// token's exp, with the kid of the key that signed it. Verifying an EdDSA
// signature costs more than the rest of a read; a cached token costs a
// hash, an LRU lookup and a look at its key (docs/performance.md, "What
// the tuning changed").
//
// It changes no revocation rule: a token leaves the cache at its exp (the
// leeway past exp is granted only by a full verification); Verify serves
// a cached token only while its key is still known and not retired, and
// the cache is emptied whenever the set of keys changes; whether the user
// still exists with the token's profiles is checked by the application on
// every request, cached or not.
//
// When full, the least recently used token goes: a flood of valid tokens
// then costs full verifications, never memory, and the tokens in active
// use stay. golang-lru's expirable cache does not fit: it has one TTL for
// every entry (ours end at each token's exp), reads the wall clock rather
// than ports.Clock, and starts a goroutine that never ends.
type verifiedCache struct {
	entries *lru.Cache[[sha256.Size]byte, cachedPrincipal]
}

type cachedPrincipal struct {
	principal domain.Principal
	kid       string
	until     time.Time
}

func newVerifiedCache() *verifiedCache {
	entries, err := lru.New[[sha256.Size]byte, cachedPrincipal](verifiedCacheSize)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &verifiedCache{entries: entries}
}

// get returns the principal of a token verified before and not yet
// expired, and the kid of its key, which the caller must check.
func (c *verifiedCache) get(token string, now time.Time) (domain.Principal, string, bool) {
	key := tokenKey(token)
	e, ok := c.entries.Get(key)
	if !ok {
		return domain.Principal{}, "", false
	}
	if !now.Before(e.until) {
		c.entries.Remove(key)
		return domain.Principal{}, "", false
	}
	// The caller may keep or change the slice; the cached one stays intact.
	p := e.principal
	p.Profiles = slices.Clone(p.Profiles)
	p.Session.AMR = p.Session.AMR.Clone()
	return p, e.kid, true
}

// put remembers a token verified with the key kid until until.
func (c *verifiedCache) put(token, kid string, p domain.Principal, until, now time.Time) {
	if !now.Before(until) {
		return
	}
	p.Profiles = slices.Clone(p.Profiles)
	p.Session.AMR = p.Session.AMR.Clone()
	c.entries.Add(tokenKey(token), cachedPrincipal{principal: p, kid: kid, until: until})
}

// remove forgets a token.
func (c *verifiedCache) remove(token string) {
	c.entries.Remove(tokenKey(token))
}

// tokenKey is the cache's key of token: its SHA-256, hashed from the
// string's own bytes. sha256.Sum256([]byte(token)) copied the token (400
// bytes and more) to the heap on every read: BenchmarkVerify/EdDSA/cached
// went from 1,120 ns and 656 bytes to 810 ns and 80 bytes without the
// copy. Sum256 only reads its input: nothing writes through the slice.
func tokenKey(token string) [sha256.Size]byte {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token))) //nolint:gosec // G103: read-only view of the string, not kept
}

// purge forgets every token.
func (c *verifiedCache) purge() {
	c.entries.Purge()
}
