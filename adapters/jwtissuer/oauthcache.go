package jwtissuer

import (
	"crypto"
	"crypto/sha256"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/userd/userd/domain"
)

// verifiedAccessTokens remembers the claims of the provider's access
// tokens whose signature and claims were verified, keyed by the SHA-256
// of the token, until the token's exp, with the kid of the key that
// signed it: /oauth2/userinfo and introspection see the same token again
// and again, and an Ed25519 verification is most of their cost, as for
// userd's own tokens (verifiedCache, whose rules it keeps).
//
// It changes no revocation rule: a token leaves it at its exp (the leeway
// past exp is granted only by a full verification); a cached token is
// served only while its key is still published (not retired nor
// removed); whether its session has ended, and whether its user is still
// there and enabled, the application checks on every request, cached or
// not. Bounded (verifiedCacheSize, least recently used first out), so a
// flood of distinct tokens costs verifications, never memory.
type verifiedAccessTokens struct {
	entries *lru.Cache[[sha256.Size]byte, cachedAccess]
}

type cachedAccess struct {
	claims domain.OAuthAccessClaims
	kid    string
	until  time.Time
}

func newVerifiedAccessTokens() *verifiedAccessTokens {
	entries, err := lru.New[[sha256.Size]byte, cachedAccess](verifiedCacheSize)
	if err != nil {
		panic(err) // only for a size that is not positive
	}
	return &verifiedAccessTokens{entries: entries}
}

// get returns the claims of a token verified before, not expired at now,
// whose key published still holds (a retired or removed key's token is
// forgotten, and verified again by the caller, which refuses it).
func (c *verifiedAccessTokens) get(token string, now time.Time, published func(kid string) bool) (domain.OAuthAccessClaims, bool) {
	key := sha256.Sum256([]byte(token))
	e, ok := c.entries.Get(key)
	if !ok {
		return domain.OAuthAccessClaims{}, false
	}
	if !now.Before(e.until) || !published(e.kid) {
		c.entries.Remove(key)
		return domain.OAuthAccessClaims{}, false
	}
	return cloneAccess(e.claims), true
}

// put remembers a token verified with the key kid, until its exp.
func (c *verifiedAccessTokens) put(token, kid string, claims domain.OAuthAccessClaims, now time.Time) {
	if kid == "" || !now.Before(claims.ExpiresAt) {
		return
	}
	c.entries.Add(sha256.Sum256([]byte(token)), cachedAccess{claims: cloneAccess(claims), kid: kid, until: claims.ExpiresAt})
}

// cloneAccess copies the claims' slices: neither the caller nor the cache
// sees the other's changes.
func cloneAccess(c domain.OAuthAccessClaims) domain.OAuthAccessClaims {
	c.Scopes = slices.Clone(c.Scopes)
	c.AMR = c.AMR.Clone()
	return c
}

// published reports whether the provider still publishes the key kid.
func (p *ProviderTokens) published(kid string) bool {
	found := false
	p.keys.PublicKeys(func(k, _ string, _ crypto.PublicKey) {
		if k == kid {
			found = true
		}
	})
	return found
}
