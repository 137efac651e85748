package jwtissuer

import (
	"sync"
	"sync/atomic"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/userd/userd/ports"
)

var _ ports.TokenIssuer = (*Issuer)(nil)

// Issuer signs and verifies access tokens. New only checks its options;
// Start loads the keys, and Run keeps them current. It is safe for
// concurrent use.
type Issuer struct {
	store  ports.KeyStore
	clock  ports.Clock
	opts   Options
	alg    algorithm
	parser *jwt.Parser
	// validator checks the claims as parser does (the same options), for
	// the tokens parseOwn reads without the parser.
	validator *jwt.Validator
	// static is set when the access-token key is Options.HMACSecret: the
	// store is never read for it.
	static bool

	// keys is nil until Start has loaded them; once published, a key set
	// is never changed, only replaced.
	keys atomic.Pointer[keySet]

	// loadMu serialises reads of the store, so that an older read cannot
	// replace a newer one.
	loadMu sync.Mutex
	// missMu serialises reloads caused by unknown kids, so that callers
	// waiting on one see its keys; missReloads throttles them to one per
	// missReloadInterval.
	missMu      sync.Mutex
	missReloads *rate.Limiter

	verified *verifiedCache
	// signKID is the kid that signed when keys were last installed, to log
	// a change.
	signKID atomic.Pointer[string]

	// oidcKeys are the OpenID provider's keys, nil until Start has loaded
	// them and while Options.OIDCProvider is off; oidcSignKID is as
	// signKID.
	oidcKeys    atomic.Pointer[keySet]
	oidcSignKID atomic.Pointer[string]
}

// New returns an Issuer of the access-token keys of the configured
// algorithm in store (and, with Options.OIDCProvider, of the OpenID
// provider's keys), or an error when opts are not valid. It does no
// I/O: Start loads the keys before the Issuer is used.
func New(store ports.KeyStore, clock ports.Clock, opts Options) (*Issuer, error) {
	opts, alg, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	parserOpts := []jwt.ParserOption{
		// Only the configured algorithm: no "none", no HMAC keyed with a
		// public key, no switching between our own algorithms.
		jwt.WithValidMethods([]string{opts.Algorithm}),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(opts.Issuer),
		jwt.WithAudience(opts.Audience),
		jwt.WithLeeway(opts.Leeway),
		jwt.WithTimeFunc(clock.Now),
		// Canonical base64url only: otherwise the unused low bits of a
		// segment's last character can be changed, and one token has
		// many spellings that all verify.
		jwt.WithStrictDecoding(),
	}
	return &Issuer{
		store:    store,
		clock:    clock,
		opts:     opts,
		alg:      alg,
		static:   opts.HMACSecret != nil,
		verified: newVerifiedCache(),
		// A bucket of one: the first miss reloads at once.
		missReloads: rate.NewLimiter(rate.Every(missReloadInterval), 1),
		parser:      jwt.NewParser(parserOpts...),
		validator:   jwt.NewValidator(parserOpts...),
	}, nil
}
