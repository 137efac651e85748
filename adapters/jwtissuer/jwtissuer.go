// Package jwtissuer implements ports.TokenIssuer: JWT access tokens signed
// with one configured algorithm (EdDSA by default, ES256 or HS256) by keys
// that live in a ports.KeyStore, so that every node of a deployment signs and
// verifies with the same keys. It renders the public keys as a JWK set for
// /.well-known/jwks.json, rotates keys and retires them once no token they
// signed can still be valid (RFC 8725).
package jwtissuer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.TokenIssuer = (*Issuer)(nil)

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

// MinHMACKeyLen is the shortest HS256 key accepted, in bytes (RFC 7518,
// section 3.2: a key as long as the hash output).
const MinHMACKeyLen = 32

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
	errRetiredKID      = errors.New("key retired")
	errMissingIAT      = errors.New("missing iat")
	errBadSubject      = errors.New("sub is not a user id")
	errBadProfiles     = errors.New("missing or unknown profiles")
)

// ErrConfiguredKey is returned by Rotate when the key comes from
// Options.HMACSecret rather than from the store.
var ErrConfiguredKey = errors.New("jwt issuer: the HMAC key is configured, not stored; rotate it by changing the configuration")

// Options configure an Issuer. Every node of a deployment, and the CLI that
// rotates keys, must use the same Algorithm, TTL and Leeway.
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

// RetireAfter is how long after a newer key is created an older one retires:
// nodes keep signing with the older key until their next reload, and its last
// token is valid for TTL and the leeway after that.
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

// KeyStatus is what a key is used for at a given time.
type KeyStatus string

// Key statuses.
const (
	// StatusActive: the newest key of the configured algorithm; it signs.
	StatusActive KeyStatus = "active"
	// StatusPublished: an older key; in the JWK set and verifying until it
	// retires.
	StatusPublished KeyStatus = "published"
	// StatusRetired: no token it signed can still be valid; neither
	// published nor accepted.
	StatusRetired KeyStatus = "retired"
	// StatusIgnored: a key of another algorithm than the configured one, or
	// a stored key while the HMAC secret is configured; never used.
	StatusIgnored KeyStatus = "ignored"
)

// KeyInfo describes one access-token key, without its secret.
type KeyInfo struct {
	KID       string
	Algorithm string
	// CreatedAt is zero for a configured key.
	CreatedAt time.Time
	Status    KeyStatus
	// RetiresAt is when a published key retires (retired after it); zero
	// for the active key and ignored keys.
	RetiresAt time.Time
	// Configured is true for the key of Options.HMACSecret.
	Configured bool
}

// verificationKey is a key of the set with the metadata the JWK set shows.
type verificationKey struct {
	kid       string
	createdAt time.Time
	// retiresAt is zero while no newer key exists.
	retiresAt time.Time
	verify    any
}

func (k verificationKey) retired(now time.Time) bool {
	return !k.retiresAt.IsZero() && now.After(k.retiresAt)
}

// keySet is an immutable snapshot of the keys read from the store.
type keySet struct {
	byKID   map[string]verificationKey
	ordered []verificationKey // oldest first
	signKID string
	sign    any
}

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

// Reload re-reads the keys from the store, picking up keys that other nodes
// or `userd keys rotate` have added. Run calls it every ReloadInterval and
// Verify for an unknown kid. On failure the current keys stay.
func (i *Issuer) Reload(ctx context.Context) error {
	if i.static {
		return nil
	}
	i.loadMu.Lock()
	defer i.loadMu.Unlock()
	ks, err := i.readKeys(ctx)
	if err != nil {
		return err
	}
	if ks == nil {
		return fmt.Errorf("jwt issuer: key store has no %s access-token key", i.opts.Algorithm)
	}
	i.mu.Lock()
	old := i.keys
	i.keys = ks
	i.mu.Unlock()
	if old != nil && old.signKID != ks.signKID {
		i.opts.Logger.Info("access-token signing key changed",
			slog.String("kid", ks.signKID), slog.String("algorithm", i.opts.Algorithm))
	}
	return nil
}

// Run reloads the keys every ReloadInterval until ctx is done, so that a
// rotation made elsewhere is picked up: the new key signs here too, and old
// keys leave the JWK set. A failed reload is logged and the current keys
// stay. Run blocks; start it in a goroutine.
func (i *Issuer) Run(ctx context.Context) {
	if i.static {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(i.opts.reloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, i.opts.reloadInterval)
		err := i.Reload(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			i.opts.Logger.Warn("reloading the access-token keys failed; keeping the current ones",
				slog.String("error", err.Error()))
		}
	}
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
	tok := jwt.NewWithClaims(i.alg.method, c)
	tok.Header["kid"] = ks.signKID
	s, err := tok.SignedString(ks.sign)
	if err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", err)
	}
	return domain.AccessToken{Token: s, ExpiresAt: exp}, nil
}

// Verify checks token and returns its principal. Any failure is an error
// wrapping domain.ErrInvalidToken; its message never contains the token.
func (i *Issuer) Verify(ctx context.Context, token string) (domain.Principal, error) {
	now := i.clock.Now()
	if p, ok := i.verified.get(token, now); ok {
		return p, nil
	}
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
	p := domain.Principal{UserID: id, Profiles: profiles}
	i.verified.put(token, p, c.ExpiresAt.Time, now)
	return p, nil
}

// JWKS returns the public keys that verify tokens now, oldest first: the
// active key and the published ones, never a retired key. With HS256 the set
// is empty, as a symmetric key is never published.
func (i *Issuer) JWKS() JWKSet {
	ks, now := i.snapshot(), i.clock.Now()
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
	if k, err := i.lookup(kid); !errors.Is(err, errUnknownKID) {
		return k, err
	}
	return i.reloadForMiss(ctx, kid)
}

// snapshot returns the current key set; it is immutable once published.
func (i *Issuer) snapshot() *keySet {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.keys
}

// lookup returns the verification key of kid, errUnknownKID or, for a key
// we know to be retired, errRetiredKID.
func (i *Issuer) lookup(kid string) (any, error) {
	k, ok := i.snapshot().byKID[kid]
	switch {
	case !ok:
		return nil, errUnknownKID
	case k.retired(i.clock.Now()):
		return nil, errRetiredKID
	}
	return k.verify, nil
}

// reloadForMiss re-reads the store for a kid we do not know, at most once
// per missReloadInterval: another node may have added a key since we last
// looked.
func (i *Issuer) reloadForMiss(ctx context.Context, kid string) (any, error) {
	if i.static {
		return nil, errUnknownKID
	}
	i.missMu.Lock()
	defer i.missMu.Unlock()
	// A caller that held the lock before us may have loaded the key.
	if k, err := i.lookup(kid); !errors.Is(err, errUnknownKID) {
		return k, err
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
	return i.lookup(kid)
}

// readKeys reads the access-token keys of the configured algorithm from the
// store. It returns nil when there is none. Keys of other algorithms are
// skipped, so that a change of algorithm can roll out node by node.
func (i *Issuer) readKeys(ctx context.Context) (*keySet, error) {
	stored, err := i.store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	sched := schedule(stored, i.opts.Algorithm, i.opts.RetireAfter())
	if len(sched) == 0 {
		return nil, nil
	}
	ks := &keySet{byKID: make(map[string]verificationKey, len(sched))}
	for _, s := range sched {
		if _, dup := ks.byKID[s.ID]; dup || s.ID == "" {
			return nil, fmt.Errorf("jwt issuer: empty or repeated key id %q", s.ID)
		}
		sign, verify, err := i.alg.parse(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("jwt issuer: key %s: %w", s.ID, err)
		}
		vk := verificationKey{kid: s.ID, createdAt: s.CreatedAt, retiresAt: s.retiresAt, verify: verify}
		ks.byKID[s.ID] = vk
		ks.ordered = append(ks.ordered, vk)
		// Oldest first: the last one is the newest, and signs.
		ks.signKID, ks.sign = s.ID, sign
	}
	return ks, nil
}

// scheduledKey is a stored key with the time it retires.
type scheduledKey struct {
	domain.SigningKey
	retiresAt time.Time
}

// schedule returns the keys of alg, oldest first (by CreatedAt, then ID),
// each with the time it retires: retireAfter past the creation of the next
// newer key; zero for the newest. It is computed, not stored, so every node
// and the CLI agree without coordination.
func schedule(stored []domain.SigningKey, alg string, retireAfter time.Duration) []scheduledKey {
	var out []scheduledKey
	for _, k := range stored {
		if k.Algorithm == alg {
			out = append(out, scheduledKey{SigningKey: k})
		}
	}
	slices.SortFunc(out, func(a, b scheduledKey) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for n := 0; n+1 < len(out); n++ {
		out[n].retiresAt = out[n+1].CreatedAt.Add(retireAfter)
	}
	return out
}

// configuredKeySet is the set of the one key given by Options.HMACSecret.
func configuredKeySet(secret []byte) *keySet {
	kid := ConfiguredKID(secret)
	key := slices.Clone(secret)
	vk := verificationKey{kid: kid, verify: key}
	return &keySet{
		byKID:   map[string]verificationKey{kid: vk},
		ordered: []verificationKey{vk},
		signKID: kid,
		sign:    key,
	}
}

// ConfiguredKID is the kid of a configured HMAC secret: 16 hex digits of a
// hash of it, so that nodes with the same secret agree without storing it.
func ConfiguredKID(secret []byte) string {
	h := sha256.New()
	h.Write([]byte("userd-kid:"))
	h.Write(secret)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Rotate adds a new access-token key of the configured algorithm, with a
// fresh random kid, to store. Every node signs with it from its next reload
// (within ReloadInterval); the older keys stay published and verifying until
// no token they signed can be valid any more, then retire. With a configured
// HMAC secret it returns ErrConfiguredKey.
func Rotate(ctx context.Context, store ports.KeyStore, clock ports.Clock, opts Options) (KeyInfo, error) {
	opts, alg, err := opts.withDefaults()
	if err != nil {
		return KeyInfo{}, err
	}
	if opts.HMACSecret != nil {
		return KeyInfo{}, ErrConfiguredKey
	}
	k, err := newStoredKey(opts.Algorithm, alg, clock)
	if err != nil {
		return KeyInfo{}, err
	}
	if err := store.AddKey(ctx, k); err != nil {
		return KeyInfo{}, fmt.Errorf("jwt issuer: store key: %w", err)
	}
	return KeyInfo{KID: k.ID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, Status: StatusActive}, nil
}

// ListKeys describes the access-token keys in store, oldest first, with
// their status at the clock's time under opts. A configured HMAC key comes
// first. It never adds a key.
func ListKeys(ctx context.Context, store ports.KeyStore, clock ports.Clock, opts Options) ([]KeyInfo, error) {
	opts, _, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	stored, err := store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	now := clock.Now()
	var out []KeyInfo
	status := map[string]KeyInfo{}
	if opts.HMACSecret != nil {
		out = append(out, KeyInfo{KID: ConfiguredKID(opts.HMACSecret), Algorithm: HS256, Status: StatusActive, Configured: true})
	} else {
		sched := schedule(stored, opts.Algorithm, opts.RetireAfter())
		for n, s := range sched {
			info := KeyInfo{KID: s.ID, Algorithm: s.Algorithm, CreatedAt: s.CreatedAt, RetiresAt: s.retiresAt}
			switch {
			case n == len(sched)-1:
				info.Status = StatusActive
			case now.After(s.retiresAt):
				info.Status = StatusRetired
			default:
				info.Status = StatusPublished
			}
			status[s.ID] = info
		}
	}
	// Keep the store's order (oldest first) across algorithms.
	for _, k := range stored {
		info, ok := status[k.ID]
		if !ok || info.Algorithm != k.Algorithm {
			info = KeyInfo{KID: k.ID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, Status: StatusIgnored}
		}
		out = append(out, info)
	}
	return out, nil
}

// newStoredKey generates a key of alg with a random kid, created now.
func newStoredKey(name string, alg algorithm, clock ports.Clock) (domain.SigningKey, error) {
	secret, err := alg.generate()
	if err != nil {
		return domain.SigningKey{}, fmt.Errorf("jwt issuer: generate %s key: %w", name, err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return domain.SigningKey{}, fmt.Errorf("jwt issuer: kid: %w", err)
	}
	return domain.SigningKey{
		ID:        hex.EncodeToString(id[:]),
		Purpose:   domain.KeyPurposeAccessToken,
		Algorithm: name,
		Secret:    secret,
		CreatedAt: clock.Now(),
	}, nil
}

// algorithm is what differs between the supported algorithms.
type algorithm struct {
	method jwt.SigningMethod
	// generate returns a new key's secret as stored: PKCS#8 DER for the
	// asymmetric algorithms, raw bytes for HMAC.
	generate func() ([]byte, error)
	// parse returns the signing and the verification key of a stored secret.
	parse func(secret []byte) (sign, verify any, err error)
	// jwk returns the public JWK of a verification key; false for a
	// symmetric key, which is never published.
	jwk func(kid string, verify any) (JWK, bool)
}

var algorithms = map[string]algorithm{
	EdDSA: {
		method: jwt.SigningMethodEdDSA,
		generate: func() ([]byte, error) {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			return x509.MarshalPKCS8PrivateKey(priv)
		},
		parse: func(secret []byte) (any, any, error) {
			priv, err := parseEd25519(secret)
			if err != nil {
				return nil, nil, err
			}
			return priv, priv.Public().(ed25519.PublicKey), nil
		},
		jwk: func(kid string, verify any) (JWK, bool) {
			return JWK{
				Kty: "OKP", Crv: "Ed25519",
				X:   base64.RawURLEncoding.EncodeToString(verify.(ed25519.PublicKey)),
				Kid: kid, Alg: EdDSA, Use: "sig",
			}, true
		},
	},
	ES256: {
		method: jwt.SigningMethodES256,
		generate: func() ([]byte, error) {
			priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				return nil, err
			}
			return x509.MarshalPKCS8PrivateKey(priv)
		},
		parse: func(secret []byte) (any, any, error) {
			priv, err := parseP256(secret)
			if err != nil {
				return nil, nil, err
			}
			return priv, &priv.PublicKey, nil
		},
		jwk: func(kid string, verify any) (JWK, bool) {
			// The uncompressed point 0x04 || x || y; parseP256 made sure it
			// encodes.
			b, err := verify.(*ecdsa.PublicKey).Bytes()
			if err != nil || len(b) != 65 {
				return JWK{}, false
			}
			return JWK{
				Kty: "EC", Crv: "P-256",
				X:   base64.RawURLEncoding.EncodeToString(b[1:33]),
				Y:   base64.RawURLEncoding.EncodeToString(b[33:]),
				Kid: kid, Alg: ES256, Use: "sig",
			}, true
		},
	},
	HS256: {
		method: jwt.SigningMethodHS256,
		generate: func() ([]byte, error) {
			key := make([]byte, MinHMACKeyLen)
			_, err := rand.Read(key)
			return key, err
		},
		parse: func(secret []byte) (any, any, error) {
			if len(secret) < MinHMACKeyLen {
				return nil, nil, fmt.Errorf("HMAC key shorter than %d bytes", MinHMACKeyLen)
			}
			return secret, secret, nil
		},
		jwk: func(string, any) (JWK, bool) { return JWK{}, false },
	},
}

func parseEd25519(der []byte) (ed25519.PrivateKey, error) {
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

func parseP256(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("not a P-256 ECDSA key but %T", k)
	}
	if _, err := priv.PublicKey.Bytes(); err != nil {
		return nil, fmt.Errorf("invalid P-256 public key: %w", err)
	}
	return priv, nil
}
