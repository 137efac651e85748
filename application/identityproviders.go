package application

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// IdentityProviderService manages the identity providers people sign in
// with (contract-identity.md, section 2): an admin's create, list, read,
// change and delete. A provider's client secret is write-only: it is
// taken here and kept by the store, sealed, and no answer of these use
// cases is meant to show it (the driving adapters leave it out).
type IdentityProviderService struct {
	core
	identityProviderPorts
}

// identityProviderPorts are what the IdentityProviderService uses.
type identityProviderPorts struct {
	users     ports.UserRepository
	providers ports.IdentityProviderStore
}

// CreateIdentityProvider registers a provider for an admin, in the
// contract's order: a signed-in caller, the input's form (a
// *domain.ValidationError), an admin; a slug taken is
// domain.ErrIdentityProviderSlugTaken.
func (s *IdentityProviderService) CreateIdentityProvider(ctx context.Context, actor *domain.Principal,
	in domain.IdentityProviderInput) (domain.IdentityProvider, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return domain.IdentityProvider{}, err
	}
	p, err := domain.NewIdentityProvider(in, s.clock.Now())
	if err != nil {
		return domain.IdentityProvider{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return domain.IdentityProvider{}, err
	}
	return s.create(ctx, p, actor.UserID)
}

// CreateIdentityProviderAsOperator registers a provider for the operator
// at the command line, who holds the database's credentials already.
func (s *IdentityProviderService) CreateIdentityProviderAsOperator(ctx context.Context,
	in domain.IdentityProviderInput) (domain.IdentityProvider, error) {
	p, err := domain.NewIdentityProvider(in, s.clock.Now())
	if err != nil {
		return domain.IdentityProvider{}, err
	}
	return s.create(ctx, p, "")
}

// create stores the provider and records it; actor is empty for the
// operator.
func (s *IdentityProviderService) create(ctx context.Context, p domain.IdentityProvider, actor domain.UserID) (domain.IdentityProvider, error) {
	if err := s.providers.CreateProvider(ctx, p); err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("create identity provider: %w", err)
	}
	s.events.note(ctx, domain.IdentityProviderCreatedEvent(actor, p.Slug, p.Kind))
	s.log.LogAttrs(ctx, slog.LevelInfo, "identity provider created", slog.String("provider", p.Slug),
		slog.String("kind", string(p.Kind)))
	return p, nil
}

// IdentityProviders lists the providers, by slug, for an admin.
func (s *IdentityProviderService) IdentityProviders(ctx context.Context, actor *domain.Principal) ([]domain.IdentityProvider, error) {
	if err := s.admin(ctx, actor); err != nil {
		return nil, err
	}
	return s.IdentityProvidersAsOperator(ctx)
}

// IdentityProvidersAsOperator lists the providers, by slug, for the
// operator at the command line.
func (s *IdentityProviderService) IdentityProvidersAsOperator(ctx context.Context) ([]domain.IdentityProvider, error) {
	return s.providers.Providers(ctx)
}

// IdentityProvider returns the provider slug for an admin.
func (s *IdentityProviderService) IdentityProvider(ctx context.Context, actor *domain.Principal, slug string) (domain.IdentityProvider, error) {
	if err := s.admin(ctx, actor); err != nil {
		return domain.IdentityProvider{}, err
	}
	return s.providers.Provider(ctx, slug)
}

// UpdateIdentityProvider changes the provider slug for an admin: fields
// present are replaced, absent ones kept (the secret too), the whole
// judged again; the slug and the kind cannot change. In the contract's
// order, each field's form is judged before the caller's right.
func (s *IdentityProviderService) UpdateIdentityProvider(ctx context.Context, actor *domain.Principal, slug string,
	in domain.IdentityProviderInput) (domain.IdentityProvider, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return domain.IdentityProvider{}, err
	}
	if err := in.Check(); err != nil {
		return domain.IdentityProvider{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return domain.IdentityProvider{}, err
	}
	return s.update(ctx, slug, in, actor.UserID)
}

// UpdateIdentityProviderAsOperator is UpdateIdentityProvider for the
// operator at the command line.
func (s *IdentityProviderService) UpdateIdentityProviderAsOperator(ctx context.Context, slug string,
	in domain.IdentityProviderInput) (domain.IdentityProvider, error) {
	return s.update(ctx, slug, in, "")
}

// update changes the provider slug by in and records what changed;
// actor is empty for the operator.
func (s *IdentityProviderService) update(ctx context.Context, slug string, in domain.IdentityProviderInput,
	actor domain.UserID) (domain.IdentityProvider, error) {
	var changed []string
	p, err := s.providers.UpdateProvider(ctx, slug, func(p *domain.IdentityProvider) error {
		var err error
		changed, err = p.Apply(in, s.clock.Now())
		return err
	})
	if err != nil {
		return domain.IdentityProvider{}, err
	}
	if len(changed) > 0 {
		s.events.note(ctx, domain.IdentityProviderUpdatedEvent(actor, slug, changed))
	}
	return p, nil
}

// DeleteIdentityProvider deletes the provider slug for an admin; the
// identities linked through it go with it.
func (s *IdentityProviderService) DeleteIdentityProvider(ctx context.Context, actor *domain.Principal, slug string) error {
	if err := s.admin(ctx, actor); err != nil {
		return err
	}
	return s.delete(ctx, slug, actor.UserID)
}

// DeleteIdentityProviderAsOperator is DeleteIdentityProvider for the
// operator at the command line.
func (s *IdentityProviderService) DeleteIdentityProviderAsOperator(ctx context.Context, slug string) error {
	return s.delete(ctx, slug, "")
}

// delete removes the provider slug and its identities, and records it;
// actor is empty for the operator.
func (s *IdentityProviderService) delete(ctx context.Context, slug string, actor domain.UserID) error {
	if err := s.providers.DeleteProvider(ctx, slug); err != nil {
		return err
	}
	s.events.note(ctx, domain.IdentityProviderDeletedEvent(actor, slug))
	s.log.LogAttrs(ctx, slog.LevelInfo, "identity provider deleted", slog.String("provider", slug))
	return nil
}

// admin admits a signed-in admin.
func (s *IdentityProviderService) admin(ctx context.Context, actor *domain.Principal) error {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return err
	}
	return actor.RequireAdmin()
}
