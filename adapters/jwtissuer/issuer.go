package jwtissuer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/ports"
)

var _ ports.TokenIssuer = (*Issuer)(nil)

// Issuer signs and verifies access tokens. It is safe for concurrent use.
type Issuer struct {
	store  ports.KeyStore
	clock  ports.Clock
	opts   Options
	alg    algorithm
	parser *jwt.Parser
	// static is set when the key is Options.HMACSecret: the store is
	// never read.
	static bool

	mu   sync.RWMutex
	keys *keySet

	// loadMu serialises reads of the store, so that an older read cannot
	// replace a newer one.
	loadMu sync.Mutex
	// missMu serialises reloads caused by unknown kids; lastMissReload
	// throttles them.
	missMu         sync.Mutex
	lastMissReload time.Time

	verified *verifiedCache
}

// New returns an Issuer using the access-token keys of the configured
// algorithm in store. When the store has none it generates one and stores
// it; it then re-reads the store, because another node starting at the same
// time may have stored one too. The newest key signs; older ones verify
// until they retire. Keys of other algorithms are ignored.
func New(ctx context.Context, store ports.KeyStore, clock ports.Clock, opts Options) (*Issuer, error) {
	opts, alg, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	i := &Issuer{
		store:    store,
		clock:    clock,
		opts:     opts,
		alg:      alg,
		verified: newVerifiedCache(),
		parser: jwt.NewParser(
			// Only the configured algorithm: no "none", no HMAC keyed
			// with a public key, no switching between our own algorithms.
			jwt.WithValidMethods([]string{opts.Algorithm}),
			jwt.WithExpirationRequired(),
			jwt.WithNotBeforeRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithLeeway(opts.Leeway),
			jwt.WithTimeFunc(clock.Now),
			// Canonical base64url only: otherwise the unused low bits of
			// a segment's last character can be changed, and one token
			// has many spellings that all verify.
			jwt.WithStrictDecoding(),
		),
	}

	if opts.HMACSecret != nil {
		i.static = true
		i.keys = configuredKeySet(opts.HMACSecret)
		return i, nil
	}

	ks, err := i.readKeys(ctx)
	if err != nil {
		return nil, err
	}
	if ks == nil {
		k, err := newStoredKey(opts.Algorithm, alg, clock)
		if err != nil {
			return nil, err
		}
		if err := store.AddKey(ctx, k); err != nil {
			return nil, fmt.Errorf("jwt issuer: store key: %w", err)
		}
		if ks, err = i.readKeys(ctx); err != nil {
			return nil, err
		}
		if ks == nil {
			return nil, errors.New("jwt issuer: key store returned no key after adding one")
		}
	}
	i.keys = ks
	return i, nil
}
