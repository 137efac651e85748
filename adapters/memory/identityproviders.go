package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// IdentityProviderStore is the in-memory ports.IdentityProviderStore. It
// keeps each provider's ClientSecret sealed by box, as the SQL store does,
// so that code tested against it cannot come to rely on a secret in clear.
type IdentityProviderStore struct {
	s   *Store
	box ports.SecretBox
}

var _ ports.IdentityProviderStore = (*IdentityProviderStore)(nil)

// providerSecretAD is the associated data a provider's client secret is
// sealed with: bound to its purpose and its provider, so that a sealed
// value copied to another provider, or to another kind of secret sealed
// with the same key (a TOTP secret under a user id that happens to match
// a slug), does not open.
func providerSecretAD(slug string) []byte { return []byte("identity-provider-client-secret:" + slug) }

// CreateProvider implements ports.IdentityProviderStore.
func (r *IdentityProviderStore) CreateProvider(ctx context.Context, p domain.IdentityProvider) error {
	sealed, err := r.box.Seal([]byte(p.ClientSecret), providerSecretAD(p.Slug))
	if err != nil {
		return fmt.Errorf("create identity provider: %w", err)
	}
	p = copyIdentityProvider(p)
	p.ClientSecret = string(sealed)
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.providers[p.Slug]; ok {
		return fmt.Errorf("create identity provider: %w", domain.ErrIdentityProviderSlugTaken)
	}
	s.providers[p.Slug] = p
	return nil
}

// open returns the stored p with its secret opened.
func (r *IdentityProviderStore) open(p domain.IdentityProvider) (domain.IdentityProvider, error) {
	secret, err := r.box.Open([]byte(p.ClientSecret), providerSecretAD(p.Slug))
	if err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("identity provider %s: %w", p.Slug, err)
	}
	p = copyIdentityProvider(p)
	p.ClientSecret = string(secret)
	return p, nil
}

// Provider implements ports.IdentityProviderStore.
func (r *IdentityProviderStore) Provider(ctx context.Context, slug string) (domain.IdentityProvider, error) {
	s := r.s
	defer s.lock(ctx)()
	p, ok := s.providers[slug]
	if !ok {
		return domain.IdentityProvider{}, fmt.Errorf("identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	return r.open(p)
}

// Providers implements ports.IdentityProviderStore. It sorts on every
// call: a deployment has a handful of providers.
func (r *IdentityProviderStore) Providers(ctx context.Context) ([]domain.IdentityProvider, error) {
	s := r.s
	defer s.lock(ctx)()
	out := make([]domain.IdentityProvider, 0, len(s.providers))
	for _, p := range s.providers {
		opened, err := r.open(p)
		if err != nil {
			return nil, err
		}
		out = append(out, opened)
	}
	slices.SortFunc(out, func(a, b domain.IdentityProvider) int { return strings.Compare(a.Slug, b.Slug) })
	return out, nil
}

// UpdateProvider implements ports.IdentityProviderStore under the store's
// lock.
func (r *IdentityProviderStore) UpdateProvider(ctx context.Context, slug string, fn func(*domain.IdentityProvider) error) (domain.IdentityProvider, error) {
	s := r.s
	defer s.lock(ctx)()
	stored, ok := s.providers[slug]
	if !ok {
		return domain.IdentityProvider{}, fmt.Errorf("update identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	old, err := r.open(stored)
	if err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("update identity provider: %w", err)
	}
	p := copyIdentityProvider(old)
	if err := fn(&p); err != nil {
		return domain.IdentityProvider{}, err
	}
	p.Slug, p.Kind, p.CreatedAt = old.Slug, old.Kind, old.CreatedAt
	p = copyIdentityProvider(p)
	sealed, err := r.box.Seal([]byte(p.ClientSecret), providerSecretAD(p.Slug))
	if err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("update identity provider: %w", err)
	}
	kept := copyIdentityProvider(p)
	kept.ClientSecret = string(sealed)
	s.providers[slug] = kept
	return p, nil
}

// DeleteProvider implements ports.IdentityProviderStore. The identities
// linked through the provider go with it, as the SQL foreign key deletes
// them.
func (r *IdentityProviderStore) DeleteProvider(ctx context.Context, slug string) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.providers[slug]; !ok {
		return fmt.Errorf("delete identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	delete(s.providers, slug)
	for k := range s.identities {
		if k.provider == slug {
			delete(s.identities, k)
		}
	}
	return nil
}

// Reencrypt re-seals every client secret that is not sealed under the
// box's current key and returns how many it changed; a secret that does
// not open changes nothing. It is the SQL store's, for the contract
// suite.
func (r *IdentityProviderStore) Reencrypt(ctx context.Context) (int, error) {
	s := r.s
	defer s.lock(ctx)()
	resealed := map[string]string{}
	for slug, p := range s.providers {
		secret, err := r.box.Open([]byte(p.ClientSecret), providerSecretAD(slug))
		if err != nil {
			return 0, fmt.Errorf("re-encrypt client secret of identity provider %s: %w", slug, err)
		}
		if r.box.Current([]byte(p.ClientSecret)) {
			continue
		}
		sealed, err := r.box.Seal(secret, providerSecretAD(slug))
		if err != nil {
			return 0, fmt.Errorf("re-encrypt client secret of identity provider %s: %w", slug, err)
		}
		resealed[slug] = string(sealed)
	}
	for slug, sealed := range resealed {
		p := s.providers[slug]
		p.ClientSecret = sealed
		s.providers[slug] = p
	}
	return len(resealed), nil
}

// identityKey is an identity's key: the provider's slug and subject.
type identityKey struct{ provider, subject string }

// UserIdentityStore is the in-memory ports.UserIdentityStore.
type UserIdentityStore struct{ s *Store }

var _ ports.UserIdentityStore = (*UserIdentityStore)(nil)

// LinkIdentity implements ports.UserIdentityStore.
func (r *UserIdentityStore) LinkIdentity(ctx context.Context, id domain.UserIdentity) error {
	id = copyUserIdentity(id)
	s := r.s
	defer s.lock(ctx)()
	// The provider first, as the SQL store tells them apart.
	if _, ok := s.providers[id.Provider]; !ok {
		return fmt.Errorf("link identity: %w", domain.ErrIdentityProviderNotFound)
	}
	if _, ok := s.users[id.UserID]; !ok {
		return fmt.Errorf("link identity: %w", domain.ErrUserNotFound)
	}
	key := identityKey{id.Provider, id.Subject}
	if _, ok := s.identities[key]; ok {
		return fmt.Errorf("link identity: %w", domain.ErrIdentityTaken)
	}
	for k, other := range s.identities {
		if k.provider == id.Provider && other.UserID == id.UserID {
			return fmt.Errorf("link identity: %w", domain.ErrIdentityTaken)
		}
	}
	s.identities[key] = id
	return nil
}

// IdentityBySubject implements ports.UserIdentityStore.
func (r *UserIdentityStore) IdentityBySubject(ctx context.Context, provider, subject string) (domain.UserIdentity, error) {
	s := r.s
	defer s.lock(ctx)()
	id, ok := s.identities[identityKey{provider, subject}]
	if !ok {
		return domain.UserIdentity{}, fmt.Errorf("identity by subject: %w", domain.ErrIdentityNotFound)
	}
	return copyUserIdentity(id), nil
}

// Identities implements ports.UserIdentityStore: oldest first, the
// provider breaking ties (a user has one identity of each), as the SQL
// store orders them.
func (r *UserIdentityStore) Identities(ctx context.Context, user domain.UserID) ([]domain.UserIdentity, error) {
	s := r.s
	defer s.lock(ctx)()
	out := []domain.UserIdentity{}
	for _, id := range s.identities {
		if id.UserID == user {
			out = append(out, copyUserIdentity(id))
		}
	}
	slices.SortFunc(out, func(a, b domain.UserIdentity) int {
		if c := a.LinkedAt.Compare(b.LinkedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Provider, b.Provider)
	})
	return out, nil
}

// UnlinkIdentity implements ports.UserIdentityStore.
func (r *UserIdentityStore) UnlinkIdentity(ctx context.Context, user domain.UserID, provider string) error {
	s := r.s
	defer s.lock(ctx)()
	for k, id := range s.identities {
		if k.provider == provider && id.UserID == user {
			delete(s.identities, k)
			return nil
		}
	}
	return fmt.Errorf("unlink identity: %w", domain.ErrIdentityNotFound)
}

// TouchIdentity implements ports.UserIdentityStore.
func (r *UserIdentityStore) TouchIdentity(ctx context.Context, provider, subject string, email domain.Email, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	key := identityKey{provider, subject}
	id, ok := s.identities[key]
	if !ok {
		return nil
	}
	id.Email, id.LastUsedAt = email, normTime(at)
	s.identities[key] = id
	return nil
}

// deleteIdentitiesOf removes the user's identities, as the SQL foreign
// key does when the user is deleted. The caller holds the lock.
func (s *Store) deleteIdentitiesOf(user domain.UserID) {
	for k, id := range s.identities {
		if id.UserID == user {
			delete(s.identities, k)
		}
	}
}

// copyIdentityProvider copies p; its lists are empty, never nil, as the
// SQL store gives them back.
func copyIdentityProvider(p domain.IdentityProvider) domain.IdentityProvider {
	p.Scopes = append([]string{}, p.Scopes...)
	p.AllowedDomains = append([]string{}, p.AllowedDomains...)
	p.CreatedAt = normTime(p.CreatedAt)
	p.UpdatedAt = normTime(p.UpdatedAt)
	return p
}

func copyUserIdentity(id domain.UserIdentity) domain.UserIdentity {
	id.LinkedAt = normTime(id.LinkedAt)
	id.LastUsedAt = normTime(id.LastUsedAt)
	return id
}
