package jwtissuer

import (
	"encoding/json"
	"time"
)

// JWK is a public key in the form of RFC 7517: an Ed25519 key (RFC 8037, kty
// OKP), a P-256 key (RFC 7518, kty EC) or an RSA key (RFC 7518, kty RSA).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	// N and E are the modulus and exponent of an RSA key.
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is a JWK set document (RFC 7517, section 5).
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public keys that verify tokens now: the access-token
// keys, then the OpenID provider's (with Options.OIDCProvider), each in
// the order they start signing: the published keys, the active one and
// the pending ones, never a retired key. A symmetric key (HS256) is never
// published; before Start the set is empty.
func (i *Issuer) JWKS() JWKSet {
	now := i.clock.Now()
	set := JWKSet{Keys: []JWK{}}
	set.Keys = appendJWKs(set.Keys, i.snapshot(), i.alg, now)
	set.Keys = appendJWKs(set.Keys, i.oidcKeys.Load(), rs256, now)
	return set
}

// appendJWKs appends the JWKs of the keys of ks (nil for none) that are
// not retired at now.
func appendJWKs(keys []JWK, ks *keySet, alg algorithm, now time.Time) []JWK {
	if ks == nil {
		return keys
	}
	for _, k := range ks.ordered {
		if k.retired(now) {
			continue
		}
		if jwk, ok := alg.jwk(k.kid, k.verify); ok {
			keys = append(keys, jwk)
		}
	}
	return keys
}

// JWKSJSON returns JWKS encoded as JSON, ready to be served as
// application/jwk-set+json or application/json.
func (i *Issuer) JWKSJSON() []byte {
	// A struct of strings always encodes.
	b, _ := json.Marshal(i.JWKS())
	return b
}

// JWKSMaxAge returns JWKSMaxAge: how long the JWK set may be cached. A
// rotated key signs only after that long, so the set must not be served
// with a longer lifetime.
func (i *Issuer) JWKSMaxAge() time.Duration {
	return JWKSMaxAge
}
