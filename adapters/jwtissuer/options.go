package jwtissuer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The JWS algorithms an Issuer can be configured with.
const (
	// EdDSA is Ed25519 (RFC 8037), the default.
	EdDSA = "EdDSA"
	// ES256 is ECDSA on P-256 with SHA-256.
	ES256 = "ES256"
	// HS256 is HMAC-SHA-256 with a shared secret; its keys are never
	// published.
	HS256 = "HS256"
)

// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) is the algorithm of the OpenID
// provider's own keys (Options.OIDCProvider): the default of ID tokens,
// and the one every OpenID client supports. It is not an algorithm of
// access tokens.
const RS256 = "RS256"

// RSA key sizes of the OpenID provider's keys, in bits. Keys are made
// with ProviderKeyBits; a stored key shorter than MinRSAKeyBits is refused
// (RFC 7518, section 3.3 and the contract: 2048 or more). 2048 rather than
// 3072, by BenchmarkProviderSign on the shared 2-core machine of
// docs/performance.md (medians of six runs): an ID token costs 1.25 ms to
// sign at 2048 bits, 3.1 ms at 3072 (2.4 times) and 0.03 ms with Ed25519;
// making a key (BenchmarkProviderKeyGeneration), 60 ms and 200 to 300 ms.
// Every code exchange of the provider, and every refresh that returns an
// ID token, signs one: at 3072 bits the signature alone would hold the
// code exchange to about 650/s on the two cores, under the target
// of 0.5 times userd's refresh rate (1,500/s on SQLite); at 2048 it allows
// about 1,600/s. 2048-bit keys stay sound for keys that rotate (NIST SP
// 800-57 part 1 accepts them through 2030) and are what the large OpenID
// providers publish.
const (
	ProviderKeyBits = 2048
	MinRSAKeyBits   = 2048
)

// Defaults of Options.
const (
	DefaultAlgorithm = EdDSA
	DefaultTTL       = 15 * time.Minute
	DefaultLeeway    = 30 * time.Second
)

// ReloadInterval is how often Run re-reads the key store. It is a constant,
// not a setting, because the retirement of rotated-out keys is computed from
// it: every node and the CLI must agree on it.
const ReloadInterval = 30 * time.Second

// JWKSMaxAge is how long a verifier may cache the published key set: the
// HTTP adapter serves it as the max-age of /.well-known/jwks.json (through
// Issuer.JWKSMaxAge), and a rotated key starts signing only once every
// copy cached before it was published has expired (Options.ActivateAfter).
// It lives here, beside ReloadInterval, because the key schedule is
// computed from it; every node and the CLI must agree on it.
const JWKSMaxAge = 5 * time.Minute

// TokenType is the typ header of an access token: a JWT access token of
// RFC 9068. Verify accepts it, or its full media type application/at+jwt,
// in any letter case (RFC 7515, section 4.1.9), and nothing else.
const TokenType = "at+jwt"

// MinHMACKeyLen is the shortest HS256 key accepted, in bytes (RFC 7518,
// section 3.2: a key as long as the hash output).
const MinHMACKeyLen = 32

// Options configure an Issuer. Every node of a deployment, and the CLI that
// rotates keys, must use the same Algorithm, TTL, Leeway and OIDCProvider.
type Options struct {
	// Issuer is the iss claim written and required; must not be empty.
	Issuer string
	// Audience is the aud claim written and required; must not be empty.
	Audience string
	// Algorithm is EdDSA, ES256 or HS256; empty means DefaultAlgorithm.
	// Only this algorithm is accepted, and only keys of it are used.
	Algorithm string
	// HMACSecret, with HS256 only, is the one key instead of keys in the
	// store; at least MinHMACKeyLen bytes. Its kid is derived from it, so
	// nodes with the same secret agree.
	HMACSecret []byte
	// TTL is the lifetime of a token; zero means DefaultTTL.
	TTL time.Duration
	// Leeway is the clock skew tolerated on exp, nbf and iat; zero means
	// DefaultLeeway.
	Leeway time.Duration
	// OIDCProvider is set while the OpenID provider is on
	// (USERD_OIDC_PROVIDER): the Issuer then also loads (at first start,
	// makes) the provider's RS256 keys, publishes them in the JWK set and
	// serves them through ProviderKeys, and the KeyManager rotates and
	// lists them with the access-token keys. Whatever Algorithm is, and
	// with HMACSecret too. Off, no such key is made, loaded or published.
	OIDCProvider bool
	// Logger receives the warnings of Run; nil discards them.
	Logger *slog.Logger

	// reloadInterval replaces ReloadInterval in this package's tests.
	reloadInterval time.Duration
}

// withDefaults checks o and fills in its defaults.
func (o Options) withDefaults() (Options, algorithm, error) {
	if o.Issuer == "" || o.Audience == "" {
		return o, algorithm{}, errors.New("jwt issuer: issuer and audience must be set")
	}
	if o.TTL < 0 || o.Leeway < 0 {
		return o, algorithm{}, errors.New("jwt issuer: ttl and leeway must not be negative")
	}
	if o.Algorithm == "" {
		o.Algorithm = DefaultAlgorithm
	}
	alg, ok := algorithms[o.Algorithm]
	if !ok {
		return o, algorithm{}, fmt.Errorf("jwt issuer: unsupported algorithm %q (want EdDSA, ES256 or HS256)", o.Algorithm)
	}
	if o.HMACSecret != nil {
		if o.Algorithm != HS256 {
			return o, algorithm{}, errors.New("jwt issuer: an HMAC secret is only used with HS256")
		}
		// Never the secret itself in the message.
		if len(o.HMACSecret) < MinHMACKeyLen {
			return o, algorithm{}, fmt.Errorf("jwt issuer: the HMAC secret must be at least %d bytes", MinHMACKeyLen)
		}
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	if o.reloadInterval <= 0 {
		o.reloadInterval = ReloadInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, alg, nil
}

// ActivateAfter is how long after a rotation the new key starts signing:
// every node publishes it within a reload, every copy of the key set cached
// before that expires JWKSMaxAge later, and a node whose clock runs ahead
// by up to the leeway must not sign early.
func (o Options) ActivateAfter() time.Duration {
	reload, leeway := o.reloadInterval, o.Leeway
	if reload <= 0 {
		reload = ReloadInterval
	}
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	return reload + JWKSMaxAge + leeway
}

// RetireAfter is how long after a newer key starts signing an older one
// retires: a node that has not reloaded since may sign with the older key
// until its next reload, and that token is valid for TTL and the leeway
// after that.
func (o Options) RetireAfter() time.Duration {
	reload, ttl, leeway := o.reloadInterval, o.TTL, o.Leeway
	if reload <= 0 {
		reload = ReloadInterval
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	return reload + ttl + leeway
}
