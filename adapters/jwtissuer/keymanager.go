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
// options as the Issuers of a deployment: Rotate adds a key, which every
// Issuer publishes within ReloadInterval and signs with from the time the
// key says; List shows what each key is used for. It keeps no keys itself, so `userd keys` uses it without starting
// an Issuer. It is safe for concurrent use.
type KeyManager struct {
	store ports.KeyStore
	clock ports.Clock
	opts  Options
	alg   algorithm
}

// NewKeyManager returns a KeyManager, or an error when opts are not valid.
// opts must be those of the Issuers (Algorithm, TTL, HMACSecret), since
// the retirement of old keys is computed from them. It does no I/O.
func NewKeyManager(store ports.KeyStore, clock ports.Clock, opts Options) (*KeyManager, error) {
	opts, alg, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &KeyManager{store: store, clock: clock, opts: opts, alg: alg}, nil
}

// Rotate adds a new access-token key of the configured algorithm, with a
// fresh random kid, to the store. Every node publishes it from its next
// reload (within ReloadInterval). With domain.RotateWhenPublished it signs
// only ActivateAfter from now, once every cached copy of the key set
// lacking it has expired; at once when the store holds no key of the
// algorithm yet, as nothing else could sign. With domain.RotateNow it
// signs as soon as each node has reloaded. Its activation is stored as the
// key's CreatedAt. The older keys stay published and verifying until no
// token they signed can be valid any more, then retire. With
// Options.HMACSecret it returns domain.ErrKeyConfigured.
func (m *KeyManager) Rotate(ctx context.Context, when domain.KeyRotation) (domain.KeyInfo, error) {
	if m.opts.HMACSecret != nil {
		return domain.KeyInfo{}, domain.ErrKeyConfigured
	}
	stored, err := m.store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return domain.KeyInfo{}, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	k, err := newStoredKey(m.opts.Algorithm, m.alg, m.clock)
	if err != nil {
		return domain.KeyInfo{}, err
	}
	status := domain.KeyActive
	if when != domain.RotateNow && len(schedule(stored, m.opts.Algorithm, 0)) > 0 {
		k.CreatedAt = k.CreatedAt.Add(m.opts.ActivateAfter())
		status = domain.KeyPending
	}
	if err := m.store.AddKey(ctx, k); err != nil {
		return domain.KeyInfo{}, fmt.Errorf("jwt issuer: store key: %w", err)
	}
	return domain.KeyInfo{KID: k.ID, Algorithm: k.Algorithm, ActiveFrom: k.CreatedAt, Status: status}, nil
}

// List describes the access-token keys in the store, in the order they
// start signing, with their status at the clock's time. A configured HMAC
// key comes first, and every stored key is then ignored. It never adds a
// key.
func (m *KeyManager) List(ctx context.Context) ([]domain.KeyInfo, error) {
	stored, err := m.store.Keys(ctx, domain.KeyPurposeAccessToken)
	if err != nil {
		return nil, fmt.Errorf("jwt issuer: read keys: %w", err)
	}
	now := m.clock.Now()
	var out []domain.KeyInfo
	status := map[string]domain.KeyInfo{}
	if m.opts.HMACSecret != nil {
		out = append(out, domain.KeyInfo{KID: ConfiguredKID(m.opts.HMACSecret), Algorithm: HS256, Status: domain.KeyActive, Configured: true})
	} else {
		sched := schedule(stored, m.opts.Algorithm, m.opts.RetireAfter())
		signer := -1
		if len(sched) > 0 {
			signer = signerAt(sched, func(k scheduledKey) time.Time { return k.CreatedAt }, now)
		}
		for n, s := range sched {
			info := domain.KeyInfo{KID: s.ID, Algorithm: s.Algorithm, ActiveFrom: s.CreatedAt, RetiresAt: s.retiresAt}
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
	// Keep the store's order (by CreatedAt) across algorithms.
	for _, k := range stored {
		info, ok := status[k.ID]
		if !ok || info.Algorithm != k.Algorithm {
			info = domain.KeyInfo{KID: k.ID, Algorithm: k.Algorithm, ActiveFrom: k.CreatedAt, Status: domain.KeyIgnored}
		}
		out = append(out, info)
	}
	return out, nil
}
