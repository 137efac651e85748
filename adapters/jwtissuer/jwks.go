package jwtissuer

import (
	"encoding/json"
	"time"
)

// JWK is a public key in the form of RFC 7517: an Ed25519 key (RFC 8037, kty
// OKP) or a P-256 key (RFC 7518, kty EC).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is a JWK set document (RFC 7517, section 5).
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public keys that verify tokens now, in the order they
// start signing: the published keys, the active one and the pending ones,
// never a retired key. With HS256 the set
// is empty, as a symmetric key is never published; so is it before Start.
func (i *Issuer) JWKS() JWKSet {
	ks, now := i.snapshot(), i.clock.Now()
	if ks == nil {
		return JWKSet{Keys: []JWK{}}
	}
	set := JWKSet{Keys: make([]JWK, 0, len(ks.ordered))}
	for _, k := range ks.ordered {
		if k.retired(now) {
			continue
		}
		if jwk, ok := i.alg.jwk(k.kid, k.verify); ok {
			set.Keys = append(set.Keys, jwk)
		}
	}
	return set
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
