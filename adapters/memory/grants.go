package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// grantKey is the key of a grant: one per user and client.
type grantKey struct {
	user   domain.UserID
	client domain.OAuthClientID
}

// GrantStore is the in-memory ports.GrantStore.
type GrantStore struct{ s *Store }

var _ ports.GrantStore = (*GrantStore)(nil)

// Grant implements ports.GrantStore.
func (r *GrantStore) Grant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) (domain.Grant, error) {
	s := r.s
	defer s.lock(ctx)()
	g, ok := s.grants[grantKey{user, client}]
	if !ok {
		return domain.Grant{}, fmt.Errorf("grant: %w", domain.ErrGrantNotFound)
	}
	return copyGrant(g), nil
}

// PutGrant implements ports.GrantStore. As the SQL store, it returns
// domain.ErrOAuthClientNotFound when the client does not exist, else
// domain.ErrUserNotFound when the user does not.
func (r *GrantStore) PutGrant(ctx context.Context, g domain.Grant) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.clients[g.ClientID]; !ok {
		return fmt.Errorf("put grant: %w", domain.ErrOAuthClientNotFound)
	}
	if _, ok := s.users[g.UserID]; !ok {
		return fmt.Errorf("put grant: %w", domain.ErrUserNotFound)
	}
	k := grantKey{g.UserID, g.ClientID}
	if old, ok := s.grants[k]; ok {
		g.CreatedAt = old.CreatedAt
	}
	s.grants[k] = copyGrant(g)
	return nil
}

// Grants implements ports.GrantStore: oldest first, then by client id.
func (r *GrantStore) Grants(ctx context.Context, user domain.UserID) ([]domain.Grant, error) {
	s := r.s
	defer s.lock(ctx)()
	out := []domain.Grant{}
	for k, g := range s.grants {
		if k.user == user {
			out = append(out, copyGrant(g))
		}
	}
	slices.SortFunc(out, func(a, b domain.Grant) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out, nil
}

// DeleteGrant implements ports.GrantStore.
func (r *GrantStore) DeleteGrant(ctx context.Context, user domain.UserID, client domain.OAuthClientID) error {
	s := r.s
	defer s.lock(ctx)()
	k := grantKey{user, client}
	if _, ok := s.grants[k]; !ok {
		return fmt.Errorf("delete grant: %w", domain.ErrGrantNotFound)
	}
	delete(s.grants, k)
	return nil
}

// copyGrant copies g; its scopes are empty, never nil, as the SQL store
// gives them back.
func copyGrant(g domain.Grant) domain.Grant {
	g.Scopes = append([]domain.OAuthScope{}, g.Scopes...)
	g.CreatedAt = normTime(g.CreatedAt)
	g.UpdatedAt = normTime(g.UpdatedAt)
	return g
}
