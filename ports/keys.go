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

// AccessTokenKeys manages the keys that sign access tokens, for the
// operator's key rotation.
type AccessTokenKeys interface {
	// Rotate adds a new signing key of the configured algorithm and returns
	// it. The key is published at once; when it starts signing depends on
	// when: with domain.RotateWhenPublished only after every cached copy of
	// the published key set has expired (at once when it is the first key
	// of its algorithm), with domain.RotateNow at once. Older keys keep
	// verifying until every token they signed has expired, then retire. It
	// returns domain.ErrKeyConfigured when the signing key comes from the
	// configuration rather than the store, or an error wrapping
	// domain.ErrUnavailable.
	Rotate(ctx context.Context, when domain.KeyRotation) (domain.KeyInfo, error)
	// List describes every access-token key, oldest first, with what it is
	// used for now. It may return an error wrapping domain.ErrUnavailable.
	List(ctx context.Context) ([]domain.KeyInfo, error)
}
