package application

import (
	"context"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// identityPorts are what the FederationService uses of the stores to
// keep an account's identities.
type identityPorts struct {
	users      ports.UserRepository
	providers  ports.IdentityProviderStore
	identities ports.UserIdentityStore
	passkeys   ports.PasskeyStore
	tx         ports.Transactor
	webhooks   *webhookQueue
	// upstream speaks to the providers; nil turns the flows off.
	upstream ports.IdentityProviderClient
	// signIn ends a sign-in that a provider proved.
	signIn *signInPath
	// callbackBase is USERD_PUBLIC_URL without a trailing slash: the
	// callback is callbackBase/auth/idp/{slug}/callback.
	callbackBase string
}

// Identities lists the identities at other providers linked to the
// account rawID, oldest first: for an admin, or for the account itself.
func (s *FederationService) Identities(ctx context.Context, actor *domain.Principal, rawID string) ([]domain.UserIdentity, error) {
	id, err := s.identityOwner(ctx, actor, rawID)
	if err != nil {
		return nil, err
	}
	return s.identities.Identities(ctx, id)
}

// UnlinkIdentity removes the account rawID's identity at the provider
// slug, for an admin or the account itself: domain.ErrIdentityNotFound
// when it has none there, domain.ErrLastSignInMethod when the account
// would be left with no password, passkey or other identity to sign in
// with. identity.unlinked goes to the audit trail and the webhook.
func (s *FederationService) UnlinkIdentity(ctx context.Context, actor *domain.Principal, rawID, slug string) error {
	id, err := s.identityOwner(ctx, actor, rawID)
	if err != nil {
		return err
	}
	if _, msg := domain.ParseIdentityProviderSlug(slug); msg != "" {
		return domain.ErrIdentityNotFound
	}
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.keepsASignInMethod(ctx, id, slug); err != nil {
			return err
		}
		if err := s.identities.UnlinkIdentity(ctx, id, slug); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookIdentityUnlinked, id, map[string]any{"provider": slug})
	})
	if err != nil {
		return err
	}
	s.events.note(ctx, domain.IdentityUnlinkedEvent(actor.UserID, id, slug))
	s.log.LogAttrs(ctx, slog.LevelInfo, "identity unlinked", slog.String("user_id", id.String()), slog.String("provider", slug))
	return nil
}

// keepsASignInMethod refuses to unlink the identity at slug from the
// account id when nothing else would sign it in: a password, a passkey,
// or another identity. An identity it does not have is
// domain.ErrIdentityNotFound.
func (s *FederationService) keepsASignInMethod(ctx context.Context, id domain.UserID, slug string) error {
	ids, err := s.identities.Identities(ctx, id)
	if err != nil {
		return err
	}
	found := false
	for _, i := range ids {
		if i.Provider == slug {
			found = true
		}
	}
	if !found {
		return domain.ErrIdentityNotFound
	}
	if len(ids) > 1 {
		return nil
	}
	u, err := s.users.ByID(ctx, id)
	if err != nil {
		return err
	}
	if u.HasPassword() {
		return nil
	}
	keys, err := s.passkeys.Passkeys(ctx, id)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	return domain.ErrLastSignInMethod
}

// identityOwner runs the checks of the contract's order for the account
// rawID: the caller (401), the id's form (400), the caller's right (403),
// the account's existence (404).
func (s *FederationService) identityOwner(ctx context.Context, actor *domain.Principal, rawID string) (domain.UserID, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return "", err
	}
	id, err := domain.ParseUserID(rawID)
	if err != nil {
		return "", err
	}
	if err := actor.CanManageIdentities(id); err != nil {
		return "", err
	}
	if id != actor.UserID {
		if _, err := s.users.ByID(ctx, id); err != nil {
			return "", err
		}
	}
	return id, nil
}
