package jwtissuer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// ErrConfiguredKey is returned by Rotate when the key comes from
// Options.HMACSecret rather than from the store.
var ErrConfiguredKey = errors.New("jwt issuer: the HMAC key is configured, not stored; rotate it by changing the configuration")

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
