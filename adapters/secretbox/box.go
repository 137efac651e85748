// Package secretbox implements ports.SecretBox with AES-256-GCM from the
// standard library, and reads, parses and makes the operator's secret keys
// (USERD_SECRET_KEY, USERD_SECRET_KEY_FILE, the userd.key file).
//
// A sealed value is
//
//	version (1 byte, 1) | key id (4 bytes) | nonce (12 bytes) | ciphertext | tag (16 bytes)
//
// The key id is the first 4 bytes of the SHA-256 of the key, so that Open
// picks the key at once instead of trying each one. The nonce is random
// (crypto/cipher.NewGCMWithRandomNonce): a value is sealed when a server
// key is made, a few times a year, far below the 2^32 seals a random
// 96-bit nonce allows under one key. GCM authenticates the header together
// with the caller's associated data (the row's id), so a value altered,
// given another header, or copied to another row does not open.
package secretbox

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyLen is the length of a secret key in bytes: AES-256.
const KeyLen = 32

const (
	// version is the format of the values Seal makes.
	version = 1
	// idLen is the length of a key id.
	idLen = 4
	// headerLen is the version and the key id.
	headerLen = 1 + idLen
	// overhead is what sealing adds to the plaintext besides the header:
	// the nonce and the tag.
	overhead = 12 + 16
)

// Box implements ports.SecretBox. Its keys are set by New or SetKeys; a
// Box without keys refuses to seal or open. It is safe for concurrent use.
type Box struct {
	ring atomic.Pointer[keyring]
}

var _ ports.SecretBox = (*Box)(nil)

// keyring is the keys of a Box, the current one first.
type keyring struct {
	keys []boxKey
}

type boxKey struct {
	id   [idLen]byte
	aead cipher.AEAD
}

// New returns a Box with keys, the first of which seals (see SetKeys). With
// no keys, the Box refuses every call until SetKeys gives it some.
func New(keys ...[]byte) (*Box, error) {
	b := &Box{}
	if len(keys) == 0 {
		return b, nil
	}
	if err := b.SetKeys(keys...); err != nil {
		return nil, err
	}
	return b, nil
}

// SetKeys sets the keys: the first seals, all of them open. Each is KeyLen
// bytes; two keys with the same key id (the same key twice) are refused.
// cmd calls it at start, once the keys are read, which may mean a key file
// is made; the stores using the Box are built before. The error never
// shows a key.
func (b *Box) SetKeys(keys ...[]byte) error {
	if len(keys) == 0 {
		return fmt.Errorf("secret box: %w", domain.ErrSecretKeyMissing)
	}
	ring := &keyring{}
	for i, k := range keys {
		if len(k) != KeyLen {
			return fmt.Errorf("secret box: key %d of %d is %d bytes, want %d", i+1, len(keys), len(k), KeyLen)
		}
		id := keyID(k)
		for j, other := range ring.keys {
			if other.id == id {
				return fmt.Errorf("secret box: key %d of %d repeats key %d", i+1, len(keys), j+1)
			}
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return fmt.Errorf("secret box: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return fmt.Errorf("secret box: key %d: %w", i+1, err)
		}
		ring.keys = append(ring.keys, boxKey{id: id, aead: aead})
	}
	b.ring.Store(ring)
	return nil
}

// KeyID names a key without revealing it: the first 4 bytes of its
// SHA-256, in hex, as sealed values carry it.
func KeyID(key []byte) string {
	id := keyID(key)
	return hex.EncodeToString(id[:])
}

func keyID(key []byte) [idLen]byte {
	sum := sha256.Sum256(key)
	return [idLen]byte(sum[:idLen])
}

// CurrentKeyID is KeyID of the key that seals, "" without keys.
func (b *Box) CurrentKeyID() string {
	ring := b.ring.Load()
	if ring == nil {
		return ""
	}
	return hex.EncodeToString(ring.keys[0].id[:])
}

// Seal implements ports.SecretBox.
func (b *Box) Seal(plaintext, associatedData []byte) ([]byte, error) {
	ring := b.ring.Load()
	if ring == nil {
		return nil, fmt.Errorf("seal: %w", domain.ErrSecretKeyMissing)
	}
	k := ring.keys[0]
	out := make([]byte, headerLen, headerLen+overhead+len(plaintext))
	out[0] = version
	copy(out[1:headerLen], k.id[:])
	// No nonce is passed: NewGCMWithRandomNonce draws a random one for each
	// seal and puts it before the ciphertext.
	return k.aead.Seal(out, nil, plaintext, authenticated(out, associatedData)), nil //nolint:gosec // G407: the AEAD makes its own random nonce (NonceSize is 0)
}

// Open implements ports.SecretBox.
func (b *Box) Open(sealed, associatedData []byte) ([]byte, error) {
	ring := b.ring.Load()
	if ring == nil {
		return nil, fmt.Errorf("open: %w", domain.ErrSecretKeyMissing)
	}
	if len(sealed) < headerLen+overhead || sealed[0] != version {
		return nil, fmt.Errorf("open: %w: not a sealed value of version %d", domain.ErrSecretInvalid, version)
	}
	header, body := sealed[:headerLen], sealed[headerLen:]
	for _, k := range ring.keys {
		if !bytes.Equal(k.id[:], header[1:]) {
			continue
		}
		plain, err := k.aead.Open(nil, nil, body, authenticated(header, associatedData))
		if err != nil {
			// cipher's error says only "message authentication failed".
			return nil, fmt.Errorf("open: %w", domain.ErrSecretInvalid)
		}
		return plain, nil
	}
	return nil, fmt.Errorf("open: %w (key id %s)", domain.ErrSecretKeyUnknown, hex.EncodeToString(header[1:]))
}

// Current implements ports.SecretBox.
func (b *Box) Current(sealed []byte) bool {
	ring := b.ring.Load()
	return ring != nil && len(sealed) >= headerLen && sealed[0] == version &&
		bytes.Equal(sealed[1:headerLen], ring.keys[0].id[:])
}

// authenticated is what GCM authenticates besides the ciphertext: the
// header, so that the version and key id cannot be changed, then the
// caller's associated data.
func authenticated(header, associatedData []byte) []byte {
	ad := make([]byte, 0, headerLen+len(associatedData))
	return append(append(ad, header[:headerLen]...), associatedData...)
}

// NewKey returns a new random secret key.
func NewKey() []byte {
	k := make([]byte, KeyLen)
	// crypto/rand.Read never returns an error (it crashes the program
	// instead).
	_, _ = rand.Read(k)
	return k
}

// errNoKeys is returned by ParseKeys for a text without any key.
var errNoKeys = errors.New("holds no key")
