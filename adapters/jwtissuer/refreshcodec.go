package jwtissuer

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.RefreshTokenCodec = (*RefreshCodec)(nil)

// refreshKeyID is the id of the refresh-token HMAC key. It is fixed, so that
// nodes starting together on an empty database race to insert the same
// row: one wins, the others get domain.ErrKeyExists, and all read back the
// one key. Two keys would make nodes derive different successors.
const refreshKeyID = "refresh-hmac-1"

// refreshKeyLen is the length of the refresh-token HMAC key made by Start,
// and the shortest accepted from the store (RFC 2104: at least the hash
// output).
const refreshKeyLen = 32

// RefreshCodec implements ports.RefreshTokenCodec: tokens are random
// version 4 UUIDs; a token's successor is HMAC-SHA256 of the token under a
// key every node shares through the store, shaped as a version 4 UUID; the
// store keeps the hex SHA-256 of a token. Start loads (or creates) the key;
// Successor panics before Start has succeeded, since a successor derived
// without the key would be one anybody can compute. It is safe for
// concurrent use.
type RefreshCodec struct {
	store ports.KeyStore
	clock ports.Clock
	key   atomic.Pointer[[]byte]
}

// NewRefreshCodec returns a RefreshCodec whose key lives in store. It does
// no I/O: Start loads the key.
func NewRefreshCodec(store ports.KeyStore, clock ports.Clock) *RefreshCodec {
	return &RefreshCodec{store: store, clock: clock}
}

// Start loads the refresh-token HMAC key, creating it when the store has
// none: 32 random bytes under the well-known id, so that every node
// sharing the store uses the same key and derives the same successors. It
// returns an error wrapping domain.ErrUnavailable when the store cannot
// serve, or an error when the stored key is not usable.
func (c *RefreshCodec) Start(ctx context.Context) error {
	existing, err := c.store.Keys(ctx, domain.KeyPurposeRefreshHMAC)
	if err != nil {
		return fmt.Errorf("refresh token key: %w", err)
	}
	if len(existing) == 0 {
		secret := make([]byte, refreshKeyLen)
		// crypto/rand.Read never returns an error (it crashes the
		// program instead).
		_, _ = rand.Read(secret)
		k := domain.SigningKey{ID: refreshKeyID, Purpose: domain.KeyPurposeRefreshHMAC,
			Algorithm: HS256, Secret: secret, CreatedAt: c.clock.Now()}
		if err := c.store.AddKey(ctx, k); err != nil && !errors.Is(err, domain.ErrKeyExists) {
			return fmt.Errorf("refresh token key: %w", err)
		}
		// Read back what is stored: another node may have won the race.
		if existing, err = c.store.Keys(ctx, domain.KeyPurposeRefreshHMAC); err != nil {
			return fmt.Errorf("refresh token key: %w", err)
		}
	}
	for _, k := range existing {
		if k.ID == refreshKeyID && len(k.Secret) >= refreshKeyLen {
			key := bytes.Clone(k.Secret)
			c.key.Store(&key)
			return nil
		}
	}
	return errors.New("refresh token key: no usable key in the store")
}

// New returns a fresh random token: a lowercase version 4 UUID.
func (c *RefreshCodec) New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails; see Start
	return formatUUIDv4(b)
}

// Successor derives the token that replaces token when it is rotated:
// HMAC-SHA256 of token under the shared key, its first 16 bytes shaped as a
// version 4 UUID. It panics before Start has loaded the key.
func (c *RefreshCodec) Successor(token string) string {
	key := c.key.Load()
	if key == nil {
		panic("jwtissuer: RefreshCodec.Successor called before Start loaded the key")
	}
	mac := hmac.New(sha256.New, *key)
	mac.Write([]byte(token))
	var b [16]byte
	copy(b[:], mac.Sum(nil))
	return formatUUIDv4(b)
}

// Hash is what the store keeps instead of token: its SHA-256 in lowercase
// hex. The token carries 122 random bits, so a plain hash cannot be
// reversed by search.
func (c *RefreshCodec) Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// WellFormed accepts exactly the form New and Successor give: a lowercase
// version 4 UUID with the RFC 4122 variant. Anything else is refused before
// it reaches the store.
func (c *RefreshCodec) WellFormed(token string) bool {
	if len(token) != 36 {
		return false
	}
	for i := 0; i < len(token); i++ {
		ch := token[i]
		switch i {
		case 8, 13, 18, 23:
			if ch != '-' {
				return false
			}
		default:
			if (ch < '0' || ch > '9') && (ch < 'a' || ch > 'f') {
				return false
			}
		}
	}
	return token[14] == '4' && (token[19] == '8' || token[19] == '9' || token[19] == 'a' || token[19] == 'b')
}

// formatUUIDv4 sets the version and variant bits and formats b as
// 8-4-4-4-12 lowercase hex.
func formatUUIDv4(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}
