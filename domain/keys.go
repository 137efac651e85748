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
	// KeyPurposeOIDC: a key of the OpenID provider (RS256), which signs
	// ID tokens; it rotates with the access-token keys.
	KeyPurposeOIDC KeyPurpose = "oidc-signing"
)

// SigningKey is server-held key material shared by every node through the
// store: JWT signing keys (access tokens, the OpenID provider's), and the
// HMAC key that derives refresh-token successors.
type SigningKey struct {
	ID        string
	Purpose   KeyPurpose
	Algorithm string
	// Secret is the private key (PKCS#8 DER) or symmetric key bytes.
	Secret []byte
	// CreatedAt orders the keys of a purpose. For a signing key (access
	// token or OpenID provider) it is the moment the key starts signing, which a rotation sets ahead of
	// the clock so that every verifier has fetched the key before it meets
	// a token signed with it: such a key is stored minutes before its
	// CreatedAt.
	CreatedAt time.Time
}

// KeyStatus is what a signing key (access token or OpenID provider) is
// used for at a given time.
type KeyStatus string

// Key statuses.
const (
	// KeyActive: the newest key of its purpose and algorithm whose time to
	// sign has come; it signs.
	KeyActive KeyStatus = "active"
	// KeyPending: a rotated-in key whose time to sign has not come yet;
	// published and verifying, so that verifiers that cache the key set
	// have it before the first token it signs.
	KeyPending KeyStatus = "pending"
	// KeyPublished: an older key; published and verifying until it retires.
	KeyPublished KeyStatus = "published"
	// KeyRetired: no token it signed can still be valid; neither published
	// nor accepted.
	KeyRetired KeyStatus = "retired"
	// KeyIgnored: a key of another algorithm than the configured one, a
	// stored key while the signing key comes from the configuration, or a
	// key of the OpenID provider while the provider is off; never used.
	KeyIgnored KeyStatus = "ignored"
)

// KeyInfo describes one signing key, never its secret.
type KeyInfo struct {
	KID string
	// Purpose is KeyPurposeAccessToken or KeyPurposeOIDC.
	Purpose   KeyPurpose
	Algorithm string
	// ActiveFrom is when the key starts (or started) signing; zero for a
	// key that comes from the configuration.
	ActiveFrom time.Time
	Status     KeyStatus
	// RetiresAt is when a published key retires (it is retired after):
	// the time a newer key starts signing, plus the time the tokens it
	// signed may still be valid. Zero while no newer key is stored, and
	// for ignored keys.
	RetiresAt time.Time
	// Configured is true for a key that comes from the configuration
	// rather than the store.
	Configured bool
}

// KeyRotation says when a key added by a rotation starts signing.
type KeyRotation int

// Key rotations.
const (
	// RotateWhenPublished, the default: the new key is published at once
	// and signs only once every cached copy of the published key set that
	// lacks it has expired, so no verifier meets a kid it cannot find.
	RotateWhenPublished KeyRotation = iota
	// RotateNow: the new key signs as soon as each node has loaded it,
	// for a key that must stop signing at once (a suspected leak).
	// Verifiers holding a cached key set without it refuse its tokens
	// until they fetch the set again.
	RotateNow
)

// ErrKeyConfigured means the signing key comes from the configuration, not
// the store, so it cannot be rotated by adding a key; change the
// configuration instead.
var ErrKeyConfigured = errors.New("the signing key is configured, not stored")
