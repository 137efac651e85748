package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// The sessions granted to the OpenID provider's clients: a family by id
// whatever its state, the revocations by client, and what a deleted
// client was given.

var _ ports.OAuthClientRevoker = (*Store)(nil)

// Family implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) Family(ctx context.Context, familyID string) (domain.RefreshFamily, error) {
	s := r.s
	defer s.lock(ctx)()
	f, ok := s.families[familyID]
	if !ok {
		return domain.RefreshFamily{}, fmt.Errorf("refresh family: %w", domain.ErrSessionNotFound)
	}
	return copyFamily(f), nil
}

// Touch implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) Touch(ctx context.Context, familyID string, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	at = normTime(at)
	f, ok := s.families[familyID]
	if !ok || !f.Active(at) || !f.LastUsedAt.Before(at.Add(-ports.TouchInterval)) {
		return nil
	}
	f.LastUsedAt = at
	s.families[familyID] = f
	return nil
}

// RevokeClientSessions implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) RevokeClientSessions(ctx context.Context, userID domain.UserID, client domain.OAuthClientID, at time.Time) ([]string, error) {
	if client == "" {
		// userd's own sessions have no client: none is the client's.
		return nil, nil
	}
	s := r.s
	defer s.lock(ctx)()
	var ended []string
	for id, f := range s.families {
		if f.UserID == userID && f.ClientID == client && f.RevokedAt == nil {
			f.RevokedAt = normTimePtr(&at)
			s.families[id] = f
			ended = append(ended, id)
		}
	}
	return ended, nil
}

// RevokeClient implements ports.OAuthClientRevoker: the client's open
// sessions are revoked, its grants and authorization requests deleted,
// under one lock (inside the caller's WithinTx, its lock).
func (s *Store) RevokeClient(ctx context.Context, client domain.OAuthClientID, at time.Time) ([]ports.EndedSession, error) {
	defer s.lock(ctx)()
	ended := []ports.EndedSession{}
	if client == "" {
		return ended, nil
	}
	for id, f := range s.families {
		if f.ClientID == client && f.RevokedAt == nil {
			f.RevokedAt = normTimePtr(&at)
			s.families[id] = f
			ended = append(ended, ports.EndedSession{UserID: f.UserID, ID: id})
		}
	}
	s.deleteProviderState(func(_ domain.UserID, c domain.OAuthClientID) bool { return c == client })
	return ended, nil
}
