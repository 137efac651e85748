package jwtissuer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	voied "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/userd/userd/domain"
)

// missReloadInterval bounds how often a token with an unknown kid makes the
// issuer re-read the key store: often enough to pick up a key another node
// has just created, rarely enough that a flood of forged kids cannot turn
// into a flood of store queries.
const missReloadInterval = 5 * time.Second

// verificationKey is a key of the set with its schedule.
type verificationKey struct {
	kid string
	// activeFrom is when it starts signing (the stored CreatedAt).
	activeFrom time.Time
	// retiresAt is zero while no newer key exists.
	retiresAt time.Time
	sign      any
	verify    any
	// header is the access-token header the key signs under, encoded
	// once: Issue would otherwise marshal the same JSON for every token.
	// Empty for a key of the OpenID provider.
	header string
	// ed25519 is verify as curve25519-voi checks it (checkSignature);
	// nil but for an access-token key of EdDSA.
	ed25519 *voied.ExpandedPublicKey
}

func (k verificationKey) retired(now time.Time) bool {
	return !k.retiresAt.IsZero() && now.After(k.retiresAt)
}

// keySet is an immutable snapshot of the keys read from the store. Which
// key signs depends on the time (signer), so that a rotated key starts
// signing on every node at the moment the store says, without a reload.
type keySet struct {
	byKID   map[string]verificationKey
	ordered []verificationKey // by activation, oldest first
}

// byHeader returns the access-token key whose encoded header is header;
// false for none, and on a nil set (before Start). A set holds a few
// keys: the one signing, the next, those not yet retired.
func (ks *keySet) byHeader(header string) (verificationKey, bool) {
	if ks == nil || header == "" {
		return verificationKey{}, false
	}
	for _, k := range ks.ordered {
		if k.header == header {
			return k, true
		}
	}
	return verificationKey{}, false
}

// signer returns the key that signs at now.
func (ks *keySet) signer(now time.Time) verificationKey {
	return ks.ordered[signerAt(ks.ordered, func(k verificationKey) time.Time { return k.activeFrom }, now)]
}

// signerAt returns the index of the key that signs at now among keys
// ordered by activation (not empty): the last one whose activation has
// come, or, while none has, the first to come. The latter happens only
// when the first key of an algorithm was stored by a clock ahead of ours;
// signing with it beats not signing at all.
func signerAt[K any](keys []K, activeFrom func(K) time.Time, now time.Time) int {
	for n := len(keys) - 1; n >= 0; n-- {
		if !activeFrom(keys[n]).After(now) {
			return n
		}
	}
	return 0
}

// sameKIDs reports whether a and b hold the same keys.
func sameKIDs(a, b *keySet) bool {
	if len(a.byKID) != len(b.byKID) {
		return false
	}
	for kid := range a.byKID {
		if _, ok := b.byKID[kid]; !ok {
			return false
		}
	}
	return true
}

// errNotStarted: Issue or Verify was called before Start loaded the keys.
var errNotStarted = errors.New("jwt issuer: no key loaded; Start was not called or failed")

// keyKind is a kind of stored key that the Issuer loads and the
// KeyManager rotates: the access-token keys of the configured algorithm,
// or the OpenID provider's RS256 keys.
type keyKind struct {
	purpose domain.KeyPurpose
	// name is the algorithm's JWS name, stored with each key.
	name string
	alg  algorithm
}

// oidcKind is the OpenID provider's keys (Options.OIDCProvider).
var oidcKind = keyKind{purpose: domain.KeyPurposeOIDC, name: RS256, alg: rs256}

// accessKind is the access-token keys of the configured algorithm.
func accessKind(opts Options, alg algorithm) keyKind {
	return keyKind{purpose: domain.KeyPurposeAccessToken, name: opts.Algorithm, alg: alg}
}

// Start loads the keys, so that the Issuer can sign and verify: the newest
// key of the configured algorithm whose time has come signs, newer ones
// (pending) and older ones verify, the older until they retire; keys of
// other algorithms are ignored. When the store has none it generates one,
// which signs at once (no verifier can have cached a key set yet), and
// stores it, then re-reads the store, because another node starting at the
// same time may have stored one too. With Options.OIDCProvider it does the
// same for the provider's RS256 keys. With Options.HMACSecret the
// access-token key is not read from the store. Until Start returns nil,
// Issue fails and Verify refuses every token.
func (i *Issuer) Start(ctx context.Context) error {
	i.loadMu.Lock()
	defer i.loadMu.Unlock()
	if i.static {
		i.install(configuredKeySet(i.opts.HMACSecret, i.alg.method))
	} else {
		ks, err := i.loadOrCreate(ctx, accessKind(i.opts, i.alg))
		if err != nil {
			return err
		}
		i.install(ks)
	}
	if !i.opts.OIDCProvider {
		return nil
	}
	ks, err := i.loadOrCreate(ctx, oidcKind)
	if err != nil {
		return err
	}
	i.installOIDC(ks)
	return nil
}

// loadOrCreate reads the keys of kind, first storing one when there is none.
func (i *Issuer) loadOrCreate(ctx context.Context, kind keyKind) (*keySet, error) {
	ks, err := i.readKeys(ctx, kind)
	if err != nil || ks != nil {
		return ks, err
	}
	k, err := newStoredKey(kind, i.clock.Now())
	if err != nil {
		return nil, err
	}
	if err := i.store.AddKey(ctx, k); err != nil {
		return nil, fmt.Errorf("jwt issuer: store key: %w", err)
	}
	if ks, err = i.readKeys(ctx, kind); err != nil {
		return nil, err
	}
	if ks == nil {
		return nil, errors.New("jwt issuer: key store returned no key after adding one")
	}
	return ks, nil
}

// Reload re-reads the keys from the store, picking up keys that other nodes
// or `userd keys rotate` have added. Run calls it every ReloadInterval and
// Verify for an unknown kid. On failure the current keys stay, those of
// both purposes. Unlike Start, it never adds a key.
func (i *Issuer) Reload(ctx context.Context) error {
	if i.static && !i.opts.OIDCProvider {
		return nil
	}
	i.loadMu.Lock()
	defer i.loadMu.Unlock()
	var access, oidc *keySet
	var err error
	if !i.static {
		if access, err = i.readKeys(ctx, accessKind(i.opts, i.alg)); err != nil {
			return err
		}
		if access == nil {
			return fmt.Errorf("jwt issuer: key store has no %s access-token key", i.opts.Algorithm)
		}
	}
	if i.opts.OIDCProvider {
		if oidc, err = i.readKeys(ctx, oidcKind); err != nil {
			return err
		}
		if oidc == nil {
			return fmt.Errorf("jwt issuer: key store has no %s key of the OpenID provider", RS256)
		}
	}
	if access != nil {
		i.install(access)
	}
	if oidc != nil {
		i.installOIDC(oidc)
	}
	return nil
}

// install publishes ks. When the keys changed it empties the cache of
// verified tokens, so that no token outlives the removal of its key; and
// it logs a change of signing key, found here within a reload of its time.
func (i *Issuer) install(ks *keySet) {
	old := i.keys.Swap(ks)
	if old != nil && !sameKIDs(old, ks) {
		i.verified.purge()
	}
	i.noteSigner(&i.signKID, ks, "access-token signing key changed", i.opts.Algorithm)
}

// installOIDC publishes ks as the OpenID provider's keys.
func (i *Issuer) installOIDC(ks *keySet) {
	i.oidcKeys.Store(ks)
	i.noteSigner(&i.oidcSignKID, ks, "OpenID provider signing key changed", RS256)
}

// noteSigner logs msg when the key of ks that signs now is not the one
// last noted in last.
func (i *Issuer) noteSigner(last *atomic.Pointer[string], ks *keySet, msg, alg string) {
	kid := ks.signer(i.clock.Now()).kid
	if prev := last.Swap(&kid); prev != nil && *prev != kid {
		i.opts.Logger.Info(msg, slog.String("kid", kid), slog.String("algorithm", alg))
	}
}

// Run reloads the keys every ReloadInterval until ctx is done, so that a
// rotation made elsewhere is picked up: the new key signs here too, and old
// keys leave the JWK set. A failed reload is logged and the current keys
// stay. Run blocks; start it in a goroutine.
func (i *Issuer) Run(ctx context.Context) {
	if i.static && !i.opts.OIDCProvider {
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
			i.opts.Logger.Warn("reloading the signing keys failed; keeping the current ones",
				slog.String("error", err.Error()))
		}
	}
}

// snapshot returns the current key set, nil before Start. A key set is
// immutable once published.
func (i *Issuer) snapshot() *keySet {
	return i.keys.Load()
}

// lookup returns the verification key of kid, errUnknownKID or, for a key
// we know to be retired, errRetiredKID; errNotStarted before Start.
func (i *Issuer) lookup(kid string) (any, error) {
	return i.lookupAt(kid, i.clock.Now())
}

func (i *Issuer) lookupAt(kid string, now time.Time) (any, error) {
	ks := i.snapshot()
	if ks == nil {
		return nil, errNotStarted
	}
	k, ok := ks.byKID[kid]
	switch {
	case !ok:
		return nil, errUnknownKID
	case k.retired(now):
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
	if !i.missReloads.AllowN(i.clock.Now(), 1) {
		return nil, errUnknownKID
	}
	if err := i.Reload(ctx); err != nil {
		// Not wrapped: a store outage must not turn a 401 into something
		// else, and the store's message may be long.
		return nil, fmt.Errorf("%w (reload failed: %v)", errUnknownKID, err)
	}
	return i.lookup(kid)
}

// readKeys reads the keys of kind from the store. It returns nil when
// there is none. Keys of other algorithms are skipped, so that a change of
// algorithm can roll out node by node.
func (i *Issuer) readKeys(ctx context.Context, kind keyKind) (*keySet, error) {
	stored, err := i.store.Keys(ctx, kind.purpose)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	sched := schedule(stored, kind.name, i.opts.RetireAfter())
	if len(sched) == 0 {
		return nil, nil
	}
	ks := &keySet{byKID: make(map[string]verificationKey, len(sched))}
	for _, s := range sched {
		if _, dup := ks.byKID[s.ID]; dup || s.ID == "" {
			return nil, fmt.Errorf("jwt issuer: empty or repeated key id %q", s.ID)
		}
		sign, verify, err := kind.alg.parse(s.Secret)
		if err != nil {
			return nil, fmt.Errorf("jwt issuer: key %s: %w", s.ID, err)
		}
		vk := verificationKey{kid: s.ID, activeFrom: s.CreatedAt, retiresAt: s.retiresAt, sign: sign, verify: verify}
		if kind.purpose == domain.KeyPurposeAccessToken {
			vk.header = encodedHeader(kind.alg.method, s.ID)
			vk.ed25519 = expandEd25519(kind.alg.method, verify)
		}
		ks.byKID[s.ID] = vk
		ks.ordered = append(ks.ordered, vk)
	}
	return ks, nil
}

// scheduledKey is a stored key with the time it retires.
type scheduledKey struct {
	domain.SigningKey
	retiresAt time.Time
}

// schedule returns the keys of alg in the order they start signing (by
// CreatedAt, then ID), each with the time it retires: retireAfter past the
// activation of the next key; zero for the last. It is computed, not
// stored, so every node and the CLI agree without coordination.
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
func configuredKeySet(secret []byte, method jwt.SigningMethod) *keySet {
	kid := ConfiguredKID(secret)
	key := slices.Clone(secret)
	vk := verificationKey{kid: kid, sign: key, verify: key, header: encodedHeader(method, kid)}
	return &keySet{
		byKID:   map[string]verificationKey{kid: vk},
		ordered: []verificationKey{vk},
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
