package jwtissuer

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.AccessTokenKeys = (*KeyManager)(nil)

// KeyManager implements ports.AccessTokenKeys over the same store and
// options as the Issuers of a deployment: Rotate adds a key of each
// purpose in use (access tokens, the OpenID provider's), which every
// Issuer publishes within ReloadInterval and signs with from the time the
// key says; List shows what each key is used for. It keeps no keys
// itself, so `userd keys` uses it without starting an Issuer. It is safe
// for concurrent use.
type KeyManager struct {
	store ports.KeyStore
	clock ports.Clock
	opts  Options
	alg   algorithm
}

// NewKeyManager returns a KeyManager, or an error when opts are not valid.
// opts must be those of the Issuers (Algorithm, TTL, HMACSecret,
// OIDCProvider), since the retirement of old keys is computed from them. It does no I/O.
func NewKeyManager(store ports.KeyStore, clock ports.Clock, opts Options) (*KeyManager, error) {
	opts, alg, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &KeyManager{store: store, clock: clock, opts: opts, alg: alg}, nil
}

// rotated are the kinds of key a rotation adds: the access-token keys
// unless the key is configured, and the OpenID provider's while it is on.
func (m *KeyManager) rotated() []keyKind {
	var kinds []keyKind
	if m.opts.HMACSecret == nil {
		kinds = append(kinds, accessKind(m.opts, m.alg))
	}
	if m.opts.OIDCProvider {
		kinds = append(kinds, oidcKind)
	}
	return kinds
}

// Rotate adds a new key of each kind in use to the store, each with a
// fresh random kid: an access-token key of the configured algorithm
// (unless Options.HMACSecret is set) and, with Options.OIDCProvider, an
// RS256 key of the provider. It returns them in that order. Every node
// publishes them from its next reload (within ReloadInterval). With
// domain.RotateWhenPublished each signs only ActivateAfter from now, once
// every cached copy of the key set lacking it has expired; at once when
// the store holds no key of its purpose and algorithm yet, as nothing else
// could sign. With domain.RotateNow each signs as soon as each node has
// reloaded. Both keys get the same activation, stored as their CreatedAt.
// The older keys stay published and verifying until no token they signed
// can be valid any more, then retire. Every key is generated before the
// first is stored; should the store fail between the two, the first stays
// added, which a second rotation makes harmless. It returns
// domain.ErrKeyConfigured when there is nothing to rotate: the
// access-token key is configured and the provider is off.
func (m *KeyManager) Rotate(ctx context.Context, when domain.KeyRotation) ([]domain.KeyInfo, error) {
	kinds := m.rotated()
	if len(kinds) == 0 {
		return nil, domain.ErrKeyConfigured
	}
	now := m.clock.Now()
	keys := make([]domain.SigningKey, 0, len(kinds))
	out := make([]domain.KeyInfo, 0, len(kinds))
	for _, kind := range kinds {
		stored, err := m.store.Keys(ctx, kind.purpose)
		if err != nil {
			return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
		}
		k, err := newStoredKey(kind, now)
		if err != nil {
			return nil, err
		}
		status := domain.KeyActive
		if when != domain.RotateNow && len(schedule(stored, kind.name, 0)) > 0 {
			k.CreatedAt = k.CreatedAt.Add(m.opts.ActivateAfter())
			status = domain.KeyPending
		}
		keys = append(keys, k)
		out = append(out, domain.KeyInfo{KID: k.ID, Purpose: k.Purpose, Algorithm: k.Algorithm, ActiveFrom: k.CreatedAt, Status: status})
	}
	for _, k := range keys {
		if err := m.store.AddKey(ctx, k); err != nil {
			return nil, fmt.Errorf("jwt issuer: store key: %w", err)
		}
	}
	return out, nil
}

// List describes the signing keys in the store with their status at the
// clock's time: the access-token keys, then the OpenID provider's, each
// in the order they start signing. A configured HMAC key comes first, and
// every stored access-token key is then ignored; so is every key of the
// provider while it is off. It never adds a key.
func (m *KeyManager) List(ctx context.Context) ([]domain.KeyInfo, error) {
	access, err := m.store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	oidc, err := m.store.Keys(ctx, domain.KeyPurposeOIDC)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	now := m.clock.Now()
	var out []domain.KeyInfo
	if m.opts.HMACSecret != nil {
		out = append(out, domain.KeyInfo{KID: ConfiguredKID(m.opts.HMACSecret), Purpose: domain.KeyPurposeAccessToken,
			Algorithm: HS256, Status: domain.KeyActive, Configured: true})
	}
	out = append(out, m.describe(access, accessKind(m.opts, m.alg), m.opts.HMACSecret == nil, now)...)
	return append(out, m.describe(oidc, oidcKind, m.opts.OIDCProvider, now)...), nil
}

// describe returns the status at now of the stored keys of kind's purpose,
// in the store's order (by CreatedAt): those of kind's algorithm by their
// schedule when used, every other one ignored.
func (m *KeyManager) describe(stored []domain.SigningKey, kind keyKind, used bool, now time.Time) []domain.KeyInfo {
	status := map[string]domain.KeyInfo{}
	if used {
		sched := schedule(stored, kind.name, m.opts.RetireAfter())
		signer := -1
		if len(sched) > 0 {
			signer = signerAt(sched, func(k scheduledKey) time.Time { return k.CreatedAt }, now)
		}
		for n, s := range sched {
			info := domain.KeyInfo{KID: s.ID, Purpose: kind.purpose, Algorithm: s.Algorithm, ActiveFrom: s.CreatedAt, RetiresAt: s.retiresAt}
			switch {
			case n == signer:
				info.Status = domain.KeyActive
			case n > signer:
				info.Status = domain.KeyPending
			case now.After(s.retiresAt):
				info.Status = domain.KeyRetired
			default:
				info.Status = domain.KeyPublished
			}
			status[s.ID] = info
		}
	}
	out := make([]domain.KeyInfo, 0, len(stored))
	for _, k := range stored {
		info, ok := status[k.ID]
		if !ok || info.Algorithm != k.Algorithm {
			info = domain.KeyInfo{KID: k.ID, Purpose: k.Purpose, Algorithm: k.Algorithm, ActiveFrom: k.CreatedAt, Status: domain.KeyIgnored}
		}
		out = append(out, info)
	}
	return out
}
