package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// IdentityProviderStore keeps the identity providers people sign in
// with, in the database every node shares. A provider's ClientSecret is
// sealed at rest through the SecretBox, as the other secrets are, and
// opened when read. Every method may also return an error wrapping
// domain.ErrUnavailable when the store cannot serve for now.
type IdentityProviderStore interface {
	// CreateProvider stores a new provider, or returns
	// domain.ErrIdentityProviderSlugTaken.
	CreateProvider(ctx context.Context, p domain.IdentityProvider) error
	// Provider returns the provider with the slug, or
	// domain.ErrIdentityProviderNotFound.
	Provider(ctx context.Context, slug string) (domain.IdentityProvider, error)
	// Providers returns every provider, by slug.
	Providers(ctx context.Context) ([]domain.IdentityProvider, error)
	// UpdateProvider loads the provider, lets fn change it, and stores
	// the result atomically: no concurrent update is lost. The slug, the
	// kind and CreatedAt are kept whatever fn does. It returns the stored
	// provider, domain.ErrIdentityProviderNotFound, or fn's error
	// unchanged; in each case but the first nothing is written. fn runs
	// inside the store's transaction or lock: it must be quick and must
	// not call the store.
	UpdateProvider(ctx context.Context, slug string, fn func(*domain.IdentityProvider) error) (domain.IdentityProvider, error)
	// DeleteProvider removes the provider and the identities linked
	// through it, or returns domain.ErrIdentityProviderNotFound.
	DeleteProvider(ctx context.Context, slug string) error
}

// UserIdentityStore keeps the links of accounts to their identities at
// the providers. Every method may also return an error wrapping
// domain.ErrUnavailable when the store cannot serve for now.
type UserIdentityStore interface {
	// LinkIdentity stores the link. Its user and provider must exist. An
	// identity (provider, subject) linked already, or a user with an
	// identity of the provider already, is domain.ErrIdentityTaken, and
	// nothing is written.
	LinkIdentity(ctx context.Context, id domain.UserIdentity) error
	// IdentityBySubject returns the link of the provider's subject, or
	// domain.ErrIdentityNotFound.
	IdentityBySubject(ctx context.Context, provider, subject string) (domain.UserIdentity, error)
	// Identities returns the user's links, oldest first; none for an
	// unknown user.
	Identities(ctx context.Context, user domain.UserID) ([]domain.UserIdentity, error)
	// UnlinkIdentity removes the user's link to the provider, or returns
	// domain.ErrIdentityNotFound.
	UnlinkIdentity(ctx context.Context, user domain.UserID, provider string) error
	// TouchIdentity records a sign-in through the identity at at (its
	// LastUsedAt) and the email the provider gave then. An unknown
	// identity is no error.
	TouchIdentity(ctx context.Context, provider, subject string, email domain.Email, at time.Time) error
}
