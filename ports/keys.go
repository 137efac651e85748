package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// KeyStore keeps server-held keys that every node must share. Every method
// may return an error wrapping domain.ErrUnavailable when the store cannot
// serve for now.
type KeyStore interface {
	// Keys returns the keys of the purpose, oldest first (by CreatedAt, then ID).
	Keys(ctx context.Context, purpose domain.KeyPurpose) ([]domain.SigningKey, error)
	// AddKey stores a new key. Adding an id that exists returns
	// domain.ErrKeyExists and changes nothing, so nodes racing to create a
	// key with a well-known id agree on one.
	AddKey(ctx context.Context, k domain.SigningKey) error
}

// AccessTokenKeys manages the signing keys, for the operator's key
// rotation: those of access tokens and, while the OpenID provider is on,
// the provider's (RS256, for ID tokens), which rotate together.
type AccessTokenKeys interface {
	// Rotate adds a new signing key of each purpose in use (the access
	// tokens' of the configured algorithm, unless that key comes from the
	// configuration; the provider's while it is on) and returns them,
	// the access-token key first, all with the same activation. Each is
	// published at once; when it starts signing depends on when: with
	// domain.RotateWhenPublished only after every cached copy of the
	// published key set has expired (at once when it is the first key of
	// its purpose and algorithm), with domain.RotateNow at once. Older
	// keys keep verifying until every token they signed has expired, then
	// retire. It returns domain.ErrKeyConfigured when there is no stored
	// key to rotate (the access-token key comes from the configuration and
	// the provider is off), or an error wrapping domain.ErrUnavailable.
	Rotate(ctx context.Context, when domain.KeyRotation) ([]domain.KeyInfo, error)
	// List describes every signing key, the access-token keys first, each
	// purpose's oldest first, with what it is used for now. It may return
	// an error wrapping domain.ErrUnavailable.
	List(ctx context.Context) ([]domain.KeyInfo, error)
}
