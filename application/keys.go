package application

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyService manages the signing keys (the access tokens' and, while the
// OpenID provider is on, the provider's): the operator's `userd keys`
// commands and, for admins, the console call the same code.
type KeyService struct {
	core
	users ports.UserRepository
	keys  ports.AccessTokenKeys
}

// Rotate adds a new signing key of each purpose in use, for an admin, and
// returns them (the access-token key first); when says when they start
// signing.
func (s *KeyService) Rotate(ctx context.Context, actor *domain.Principal, when domain.KeyRotation) ([]domain.KeyInfo, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return nil, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return nil, err
	}
	return s.rotate(ctx, actor.UserID, domain.OriginAPI, when)
}

// RotateAsOperator adds a new signing key of each purpose in use for the
// operator at the command line, who holds the database's credentials
// already, and returns them; when says when they start signing.
func (s *KeyService) RotateAsOperator(ctx context.Context, when domain.KeyRotation) ([]domain.KeyInfo, error) {
	return s.rotate(ctx, "", domain.OriginOperator, when)
}

// rotate adds the keys and records each. A lost audit event does not undo
// the rotation: the keys are in use either way, and the loss is logged and
// counted.
func (s *KeyService) rotate(ctx context.Context, actor domain.UserID, origin domain.Origin, when domain.KeyRotation) ([]domain.KeyInfo, error) {
	keys, err := s.keys.Rotate(ctx, when)
	if err != nil {
		return nil, fmt.Errorf("rotate keys: %w", err)
	}
	for _, k := range keys {
		s.log.LogAttrs(ctx, slog.LevelInfo, "signing key added", slog.String("kid", k.KID), slog.String("purpose", string(k.Purpose)),
			slog.String("algorithm", k.Algorithm), slog.Time("active_from", k.ActiveFrom))
		s.events.note(ctx, domain.KeyRotatedEvent(actor, k.KID, k.Algorithm, origin))
	}
	return keys, nil
}

// List describes the signing keys, the access-token keys first, each
// purpose's oldest first, for an admin.
func (s *KeyService) List(ctx context.Context, actor *domain.Principal) ([]domain.KeyInfo, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return nil, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return nil, err
	}
	return s.ListAsOperator(ctx)
}

// ListAsOperator describes the signing keys for the operator at the
// command line.
func (s *KeyService) ListAsOperator(ctx context.Context) ([]domain.KeyInfo, error) {
	keys, err := s.keys.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}
