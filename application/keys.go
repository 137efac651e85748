package application

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// KeyService manages the access-token signing keys: the operator's
// `userd keys` commands and, for admins, the console call the same code.
type KeyService struct {
	core
	users ports.UserRepository
	keys  ports.AccessTokenKeys
}

// Rotate adds a new access-token signing key, for an admin; when says when
// it starts signing.
func (s *KeyService) Rotate(ctx context.Context, actor *domain.Principal, when domain.KeyRotation) (domain.KeyInfo, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return domain.KeyInfo{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return domain.KeyInfo{}, err
	}
	return s.rotate(ctx, actor.UserID, domain.OriginAPI, when)
}

// RotateAsOperator adds a new access-token signing key for the operator at
// the command line, who holds the database's credentials already; when
// says when it starts signing.
func (s *KeyService) RotateAsOperator(ctx context.Context, when domain.KeyRotation) (domain.KeyInfo, error) {
	return s.rotate(ctx, "", domain.OriginOperator, when)
}

// rotate adds the key and records it. A lost audit event does not undo
// the rotation: the key is in use either way, and the loss is logged and
// counted.
func (s *KeyService) rotate(ctx context.Context, actor domain.UserID, origin domain.Origin, when domain.KeyRotation) (domain.KeyInfo, error) {
	k, err := s.keys.Rotate(ctx, when)
	if err != nil {
		return domain.KeyInfo{}, fmt.Errorf("rotate keys: %w", err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "signing key added", slog.String("kid", k.KID),
		slog.String("algorithm", k.Algorithm), slog.Time("active_from", k.ActiveFrom))
	s.events.note(ctx, domain.KeyRotatedEvent(actor, k.KID, k.Algorithm, origin))
	return k, nil
}

// List describes the access-token keys, oldest first, for an admin.
func (s *KeyService) List(ctx context.Context, actor *domain.Principal) ([]domain.KeyInfo, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return nil, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return nil, err
	}
	return s.ListAsOperator(ctx)
}

// ListAsOperator describes the access-token keys for the operator at the
// command line.
func (s *KeyService) ListAsOperator(ctx context.Context) ([]domain.KeyInfo, error) {
	keys, err := s.keys.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return keys, nil
}
