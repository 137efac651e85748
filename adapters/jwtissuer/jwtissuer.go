// Package jwtissuer implements ports.TokenIssuer: Ed25519-signed (EdDSA) JWT
// access tokens whose signing keys live in a ports.KeyStore, so that every
// node of a deployment signs and verifies with the same keys. It also renders
// the public keys as a JWK set for /.well-known/jwks.json.
package jwtissuer

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.TokenIssuer = (*Issuer)(nil)

// Defaults of Options.
const (
	DefaultTTL    = 15 * time.Minute
	DefaultLeeway = 30 * time.Second
)

// Algorithm is the JWS algorithm of every token and key of this package.
const Algorithm = "EdDSA"

// missReloadInterval bounds how often a token with an unknown kid makes the
// issuer re-read the key store: often enough to pick up a key another node
// has just created, rarely enough that a flood of forged kids cannot turn
// into a flood of store queries.
const missReloadInterval = 5 * time.Second

// forbiddenHeaders are JOSE header parameters that point at key material or
// demand extensions. Keys come from our store by kid only, so a token
// carrying any of them was not made by us; refusing it outright closes the
// door on libraries or proxies downstream that might honour them.
var forbiddenHeaders = []string{"jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "crit"}

// Reasons for rejecting a token, wrapped together with domain.ErrInvalidToken.
var (
	errForbiddenHeader = errors.New("forbidden header parameter")
	errMissingKID      = errors.New("missing kid")
	errUnknownKID      = errors.New("unknown kid")
	errMissingIAT      = errors.New("missing iat")
	errBadSubject      = errors.New("sub is not a user id")
	errBadProfiles     = errors.New("missing or unknown profiles")
)

// Options configure an Issuer.
type Options struct {
	// Issuer is the iss claim written and required; must not be empty.
	Issuer string
	// Audience is the aud claim written and required; must not be empty.
	Audience string
	// TTL is the lifetime of a token; zero means DefaultTTL.
	TTL time.Duration
	// Leeway is the clock skew tolerated on exp, nbf and iat; zero means
	// DefaultLeeway.
	Leeway time.Duration
}

// JWK is an Ed25519 public key in the form of RFC 7517 and RFC 8037.
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is a JWK set document (RFC 7517, section 5).
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// claims are the claims of an access token.
type claims struct {
	jwt.RegisteredClaims
	// Audience shadows RegisteredClaims.Audience, both for encoding/json and
	// for the validator (see GetAudience). The contract wants aud as a single
	// string; golang-jwt writes one only while the package-wide
	// jwt.MarshalSingleStringAsArray is false, and flipping that would change
	// every other user of the library in the process. As a string field it
	// also makes a token whose aud is an array fail to decode, so only a
	// single string is accepted.
	Audience string   `json:"aud,omitempty"`
	Profiles []string `json:"profiles"`
}

// GetAudience makes the validator check the shadowing Audience field.
func (c claims) GetAudience() (jwt.ClaimStrings, error) {
	if c.Audience == "" {
		return nil, nil
	}
	return jwt.ClaimStrings{c.Audience}, nil
}

// verificationKey is a public key with the metadata the JWK set shows.
type verificationKey struct {
	kid       string
	pub       ed25519.PublicKey
	createdAt time.Time
}

// keySet is an immutable snapshot of the keys read from the store.
type keySet struct {
	byKID   map[string]verificationKey
	ordered []verificationKey // oldest first, as the store returns them
	signKID string
	signKey ed25519.PrivateKey
}

// Issuer signs and verifies access tokens. It is safe for concurrent use.
type Issuer struct {
	store  ports.KeyStore
	clock  ports.Clock
	opts   Options
	parser *jwt.Parser

	mu   sync.RWMutex
	keys *keySet

	// reloadMu serialises reloads caused by unknown kids; lastMissReload
	// throttles them.
	reloadMu       sync.Mutex
	lastMissReload time.Time
}

// New returns an Issuer using the access-token keys of store. When the store
// has none it generates an Ed25519 key and stores it; it then re-reads the
// store, because another node starting at the same time may have stored one
// too. Every key read verifies; the newest signs.
func New(ctx context.Context, store ports.KeyStore, clock ports.Clock, opts Options) (*Issuer, error) {
	if opts.Issuer == "" || opts.Audience == "" {
		return nil, errors.New("jwt issuer: issuer and audience must be set")
	}
	if opts.TTL < 0 || opts.Leeway < 0 {
		return nil, errors.New("jwt issuer: ttl and leeway must not be negative")
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Leeway == 0 {
		opts.Leeway = DefaultLeeway
	}
	i := &Issuer{
		store: store,
		clock: clock,
		opts:  opts,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{Algorithm}),
			jwt.WithExpirationRequired(),
			jwt.WithNotBeforeRequired(),
			jwt.WithIssuedAt(),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithLeeway(opts.Leeway),
			jwt.WithTimeFunc(clock.Now),
		),
	}

	ks, err := i.readKeys(ctx)
	if err != nil {
		return nil, err
	}
	if ks == nil {
		if err := i.generateKey(ctx); err != nil {
			return nil, err
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

// Reload re-reads the keys from the store, picking up keys that other nodes
// have added. Verify does this by itself for an unknown kid; calling Reload
// periodically also keeps the JWK set and the signing key current.
func (i *Issuer) Reload(ctx context.Context) error {
	ks, err := i.readKeys(ctx)
	if err != nil {
		return err
	}
	if ks == nil {
		return errors.New("jwt issuer: key store has no access-token key")
	}
	i.mu.Lock()
	i.keys = ks
	i.mu.Unlock()
	return nil
}

// Issue returns a signed access token for u, valid from now for the TTL.
func (i *Issuer) Issue(ctx context.Context, u domain.User) (domain.AccessToken, error) {
	if _, err := domain.ParseUserID(string(u.ID)); err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", err)
	}
	jti, err := uuid.NewRandom()
	if err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: jti: %w", err)
	}
	// JWT times have whole seconds; truncating here makes ExpiresAt equal
	// to the exp claim.
	now := i.clock.Now().Truncate(time.Second)
	exp := now.Add(i.opts.TTL)
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.opts.Issuer,
			Subject:   u.ID.String(),
			ExpiresAt: jwt.NewNumericDate(exp),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        jti.String(),
		},
		Audience: i.opts.Audience,
		Profiles: u.Profiles.Canonical().Strings(),
	}

	ks := i.snapshot()
	kid, key := ks.signKID, ks.signKey

	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", err)
	}
	return domain.AccessToken{Token: s, ExpiresAt: exp}, nil
}

// Verify checks token and returns its principal. Any failure is an error
// wrapping domain.ErrInvalidToken; its message never contains the token.
func (i *Issuer) Verify(ctx context.Context, token string) (domain.Principal, error) {
	var c claims
	_, err := i.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		return i.keyFor(ctx, t)
	})
	if err != nil {
		return domain.Principal{}, invalid(err)
	}
	// WithIssuedAt only checks an iat that is present.
	if c.IssuedAt == nil {
		return domain.Principal{}, invalid(errMissingIAT)
	}
	// The domain errors of the parsers are not wrapped: errors.Is must not
	// find ErrInvalidID or ErrInvalidProfile, which mean a bad request.
	id, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return domain.Principal{}, invalid(errBadSubject)
	}
	if c.Profiles == nil {
		return domain.Principal{}, invalid(errBadProfiles)
	}
	profiles, err := domain.ParseProfiles(c.Profiles)
	if err != nil {
		return domain.Principal{}, invalid(errBadProfiles)
	}
	return domain.Principal{UserID: id, Profiles: profiles}, nil
}

// JWKS returns the public keys that verify tokens, oldest first.
func (i *Issuer) JWKS() JWKSet {
	ks := i.snapshot()
	set := JWKSet{Keys: make([]JWK, 0, len(ks.ordered))}
	for _, k := range ks.ordered {
		set.Keys = append(set.Keys, JWK{
			Kty: "OKP",
			Crv: "Ed25519",
			X:   base64.RawURLEncoding.EncodeToString(k.pub),
			Kid: k.kid,
			Alg: Algorithm,
			Use: "sig",
		})
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

func invalid(reason error) error {
	return fmt.Errorf("%w: %w", domain.ErrInvalidToken, reason)
}

// keyFor is the jwt.Keyfunc: it runs after the algorithm check and before
// the signature check.
func (i *Issuer) keyFor(ctx context.Context, t *jwt.Token) (any, error) {
	for _, h := range forbiddenHeaders {
		if _, ok := t.Header[h]; ok {
			return nil, errForbiddenHeader
		}
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errMissingKID
	}
	if k, ok := i.lookup(kid); ok {
		return k, nil
	}
	return i.reloadForMiss(ctx, kid)
}

// snapshot returns the current key set; it is immutable once published.
func (i *Issuer) snapshot() *keySet {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.keys
}

func (i *Issuer) lookup(kid string) (ed25519.PublicKey, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	k, ok := i.keys.byKID[kid]
	return k.pub, ok
}

// reloadForMiss re-reads the store for a kid we do not know, at most once
// per missReloadInterval: another node may have added a key since we last
// looked.
func (i *Issuer) reloadForMiss(ctx context.Context, kid string) (any, error) {
	i.reloadMu.Lock()
	defer i.reloadMu.Unlock()
	// A caller that held the lock before us may have loaded the key.
	if k, ok := i.lookup(kid); ok {
		return k, nil
	}
	now := i.clock.Now()
	if !i.lastMissReload.IsZero() && now.Sub(i.lastMissReload) < missReloadInterval {
		return nil, errUnknownKID
	}
	i.lastMissReload = now
	if err := i.Reload(ctx); err != nil {
		// Not wrapped: a store outage must not turn a 401 into something
		// else, and the store's message may be long.
		return nil, fmt.Errorf("%w (reload failed: %v)", errUnknownKID, err)
	}
	if k, ok := i.lookup(kid); ok {
		return k, nil
	}
	return nil, errUnknownKID
}

// readKeys reads the access-token keys of the store. It returns nil when
// there is no EdDSA key. Keys of other algorithms are skipped, so that a
// later change of algorithm can roll out node by node.
func (i *Issuer) readKeys(ctx context.Context) (*keySet, error) {
	stored, err := i.store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	ks := &keySet{byKID: make(map[string]verificationKey, len(stored))}
	var newest domain.SigningKey
	for _, sk := range stored {
		if sk.Algorithm != Algorithm {
			continue
		}
		priv, err := parsePrivateKey(sk.Secret)
		if err != nil {
			return nil, fmt.Errorf("jwt issuer: key %s: %w", sk.ID, err)
		}
		if _, dup := ks.byKID[sk.ID]; dup || sk.ID == "" {
			return nil, fmt.Errorf("jwt issuer: empty or repeated key id %q", sk.ID)
		}
		vk := verificationKey{kid: sk.ID, pub: priv.Public().(ed25519.PublicKey), createdAt: sk.CreatedAt}
		ks.byKID[sk.ID] = vk
		ks.ordered = append(ks.ordered, vk)
		// The store returns keys oldest first, but choosing the newest here
		// does not depend on it.
		if ks.signKey == nil || sk.CreatedAt.After(newest.CreatedAt) ||
			(sk.CreatedAt.Equal(newest.CreatedAt) && sk.ID > newest.ID) {
			newest, ks.signKID, ks.signKey = sk, sk.ID, priv
		}
	}
	if ks.signKey == nil {
		return nil, nil
	}
	return ks, nil
}

func (i *Issuer) generateKey(ctx context.Context) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("jwt issuer: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("jwt issuer: encode key: %w", err)
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	err = i.store.AddKey(ctx, domain.SigningKey{
		ID:        hex.EncodeToString(id[:]),
		Purpose:   domain.KeyPurposeAccessToken,
		Algorithm: Algorithm,
		Secret:    der,
		CreatedAt: i.clock.Now(),
	})
	if err != nil {
		return fmt.Errorf("jwt issuer: store key: %w", err)
	}
	return nil
}

func parsePrivateKey(der []byte) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an Ed25519 key but %T", k)
	}
	return priv, nil
}
