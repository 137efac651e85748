package jwtissuer

import (
	"context"
	"fmt"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.AccessTokenKeys = (*KeyManager)(nil)

// KeyManager implements ports.AccessTokenKeys over the same store and
// options as the Issuers of a deployment: Rotate adds a key, which every
// Issuer picks up within ReloadInterval; List shows what each key is used
// for. It keeps no keys itself, so `userd keys` uses it without starting
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
// fresh random kid, to the store. Every node signs with it from its next
// reload (within ReloadInterval); the older keys stay published and
// verifying until no token they signed can be valid any more, then retire.
// With Options.HMACSecret it returns domain.ErrKeyConfigured.
func (m *KeyManager) Rotate(ctx context.Context) (domain.KeyInfo, error) {
	if m.opts.HMACSecret != nil {
		return domain.KeyInfo{}, domain.ErrKeyConfigured
	}
	k, err := newStoredKey(m.opts.Algorithm, m.alg, m.clock)
	if err != nil {
		return domain.KeyInfo{}, err
	}
	if err := m.store.AddKey(ctx, k); err != nil {
		return domain.KeyInfo{}, fmt.Errorf("jwt issuer: store key: %w", err)
	}
	return domain.KeyInfo{KID: k.ID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, Status: domain.KeyActive}, nil
}

// List describes the access-token keys in the store, oldest first, with
// their status at the clock's time. A configured HMAC key comes first, and
// every stored key is then ignored. It never adds a key.
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
		for n, s := range sched {
			info := domain.KeyInfo{KID: s.ID, Algorithm: s.Algorithm, CreatedAt: s.CreatedAt, RetiresAt: s.retiresAt}
			switch {
			case n == len(sched)-1:
				info.Status = domain.KeyActive
			case now.After(s.retiresAt):
				info.Status = domain.KeyRetired
			default:
				info.Status = domain.KeyPublished
			}
			status[s.ID] = info
		}
	}
	// Keep the store's order (oldest first) across algorithms.
	for _, k := range stored {
		info, ok := status[k.ID]
		if !ok || info.Algorithm != k.Algorithm {
			info = domain.KeyInfo{KID: k.ID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, Status: domain.KeyIgnored}
		}
		out = append(out, info)
	}
	return out, nil
}
