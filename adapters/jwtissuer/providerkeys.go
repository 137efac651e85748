package jwtissuer

import (
	"crypto"
	"errors"
	"fmt"
)

// ProviderKeys are the keys of the OpenID provider as its adapter needs
// them: the key that signs a token of an algorithm now, and the public
// keys that verify. It is a view of an Issuer, so its keys are those the
// Issuer loaded at Start and reloads in Run: every node sees a rotation
// within ReloadInterval, and a rotated key is published (PublicKeys, the
// JWK set) before it signs (SigningKey). Its methods name standard-library
// types only, so that the provider's adapter can declare the interface it
// needs without importing this package. It is safe for concurrent use.
type ProviderKeys struct{ iss *Issuer }

// ProviderKeys returns the OpenID provider's view of i's keys. While
// Options.OIDCProvider is off it has none.
func (i *Issuer) ProviderKeys() *ProviderKeys { return &ProviderKeys{iss: i} }

// errProviderOff: a provider's key was asked for while it is off.
var errProviderOff = errors.New("jwt issuer: the OpenID provider is off (USERD_OIDC_PROVIDER=false)")

// Algorithms returns the algorithms that SigningKey signs with, RS256
// first: RS256, and EdDSA when access tokens are signed with EdDSA. It is
// empty while the provider is off.
func (p *ProviderKeys) Algorithms() []string {
	if !p.iss.opts.OIDCProvider {
		return nil
	}
	if p.iss.opts.Algorithm == EdDSA {
		return []string{RS256, EdDSA}
	}
	return []string{RS256}
}

// SigningKey returns the key that signs a token of alg now, with its kid:
// for RS256 the provider's own key, an *rsa.PrivateKey; for EdDSA the
// access tokens' key, an ed25519.PrivateKey, when access tokens are
// signed with EdDSA. Which key signs changes at the time a rotation gave
// it, on every node alike. The key is shared: the caller must not change
// it. It fails for an algorithm that Algorithms does not list, while the
// provider is off, and before Start.
func (p *ProviderKeys) SigningKey(alg string) (kid string, key crypto.Signer, err error) {
	i := p.iss
	if !i.opts.OIDCProvider {
		return "", nil, errProviderOff
	}
	var ks *keySet
	switch {
	case alg == RS256:
		ks = i.oidcKeys.Load()
	case alg == EdDSA && i.opts.Algorithm == EdDSA:
		ks = i.snapshot()
	default:
		return "", nil, fmt.Errorf("jwt issuer: no %q signing key: the provider signs with %v", alg, p.Algorithms())
	}
	if ks == nil {
		return "", nil, errNotStarted
	}
	k := ks.signer(i.clock.Now())
	signer, ok := k.sign.(crypto.Signer)
	if !ok {
		return "", nil, fmt.Errorf("jwt issuer: the %s key %s is not a crypto.Signer", alg, k.kid)
	}
	return k.kid, signer, nil
}

// PublicKeys calls yield with each public key that verifies now, as the
// JWK set publishes them: the access tokens' (an ed25519.PublicKey for
// EdDSA, an *ecdsa.PublicKey for ES256; none for HS256), then the
// provider's (*rsa.PublicKey, RS256); each purpose's in the order they
// start signing, pending keys included, retired ones left out. The keys
// are shared: the caller must not change them. It yields nothing while
// the provider is off, or before Start.
func (p *ProviderKeys) PublicKeys(yield func(kid, alg string, key crypto.PublicKey)) {
	i := p.iss
	if !i.opts.OIDCProvider {
		return
	}
	now := i.clock.Now()
	each := func(ks *keySet, alg string) {
		if ks == nil || alg == HS256 {
			return
		}
		for _, k := range ks.ordered {
			if !k.retired(now) {
				yield(k.kid, alg, k.verify)
			}
		}
	}
	each(i.snapshot(), i.opts.Algorithm)
	each(i.oidcKeys.Load(), RS256)
}
