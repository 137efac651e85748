package domain

import (
	"errors"
	"time"
)

// KeyPurpose says what a server-held key is for.
type KeyPurpose string

// Key purposes.
const (
	// KeyPurposeAccessToken: a key that signs access tokens.
	KeyPurposeAccessToken KeyPurpose = "access-token"
	// KeyPurposeRefreshHMAC: the key that derives refresh-token successors.
	KeyPurposeRefreshHMAC KeyPurpose = "refresh-hmac"
)

// SigningKey is server-held key material shared by every node through the
// store: JWT signing keys, and the HMAC key that derives refresh-token
// successors.
type SigningKey struct {
	ID        string
	Purpose   KeyPurpose
	Algorithm string
	// Secret is the private key (PKCS#8 DER) or symmetric key bytes.
	Secret    []byte
	CreatedAt time.Time
}

// KeyStatus is what an access-token key is used for at a given time.
type KeyStatus string

// Key statuses.
const (
	// KeyActive: the newest key of the configured algorithm; it signs.
	KeyActive KeyStatus = "active"
	// KeyPublished: an older key; published and verifying until it retires.
	KeyPublished KeyStatus = "published"
	// KeyRetired: no token it signed can still be valid; neither published
	// nor accepted.
	KeyRetired KeyStatus = "retired"
	// KeyIgnored: a key of another algorithm than the configured one, or a
	// stored key while the signing key comes from the configuration; never
	// used.
	KeyIgnored KeyStatus = "ignored"
)

// KeyInfo describes one access-token key, never its secret.
type KeyInfo struct {
	KID       string
	Algorithm string
	// CreatedAt is zero for a key that comes from the configuration.
	CreatedAt time.Time
	Status    KeyStatus
	// RetiresAt is when a published key retires (it is retired after);
	// zero for the active key and for ignored keys.
	RetiresAt time.Time
	// Configured is true for a key that comes from the configuration
	// rather than the store.
	Configured bool
}

// ErrKeyConfigured means the signing key comes from the configuration, not
// the store, so it cannot be rotated by adding a key; change the
// configuration instead.
var ErrKeyConfigured = errors.New("the signing key is configured, not stored")
