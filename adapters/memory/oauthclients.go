package memory

import (
	"context"
	"fmt"
	"slices"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// OAuthClientStore is the in-memory ports.OAuthClientStore.
type OAuthClientStore struct{ s *Store }

var _ ports.OAuthClientStore = (*OAuthClientStore)(nil)

// Create implements ports.OAuthClientStore.
func (r *OAuthClientStore) Create(ctx context.Context, c domain.OAuthClient) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.clients[c.ID]; ok {
		return fmt.Errorf("create client: id %w", errDuplicate)
	}
	s.clients[c.ID] = copyOAuthClient(c)
	return nil
}

// ByID implements ports.OAuthClientStore.
func (r *OAuthClientStore) ByID(ctx context.Context, id domain.OAuthClientID) (domain.OAuthClient, error) {
	s := r.s
	defer s.lock(ctx)()
	c, ok := s.clients[id]
	if !ok {
		return domain.OAuthClient{}, fmt.Errorf("client by id: %w", domain.ErrOAuthClientNotFound)
	}
	return copyOAuthClient(c), nil
}

// List implements ports.OAuthClientStore. It sorts the ids on every call:
// a deployment has a handful of clients, not the users' millions.
func (r *OAuthClientStore) List(ctx context.Context, page domain.Page[domain.OAuthClientID]) ([]domain.OAuthClient, error) {
	s := r.s
	defer s.lock(ctx)()
	ids := make([]domain.OAuthClientID, 0, len(s.clients))
	for id := range s.clients {
		if id > page.After {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = ids[:min(len(ids), max(page.Limit, 1))]
	out := make([]domain.OAuthClient, len(ids))
	for i, id := range ids {
		out[i] = copyOAuthClient(s.clients[id])
	}
	return out, nil
}

// Update implements ports.OAuthClientStore under the store's lock.
func (r *OAuthClientStore) Update(ctx context.Context, id domain.OAuthClientID, fn func(*domain.OAuthClient) error) (domain.OAuthClient, error) {
	s := r.s
	defer s.lock(ctx)()
	old, ok := s.clients[id]
	if !ok {
		return domain.OAuthClient{}, fmt.Errorf("update client: %w", domain.ErrOAuthClientNotFound)
	}
	c := copyOAuthClient(old)
	if err := fn(&c); err != nil {
		return domain.OAuthClient{}, err
	}
	c.ID, c.CreatedAt = id, old.CreatedAt
	s.clients[id] = copyOAuthClient(c)
	return copyOAuthClient(c), nil
}

// Delete implements ports.OAuthClientStore. The client's grants and
// authorization requests go with it, as the SQL foreign keys delete them.
func (r *OAuthClientStore) Delete(ctx context.Context, id domain.OAuthClientID) error {
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.clients[id]; !ok {
		return fmt.Errorf("delete client: %w", domain.ErrOAuthClientNotFound)
	}
	delete(s.clients, id)
	s.deleteProviderState(func(_ domain.UserID, c domain.OAuthClientID) bool { return c == id })
	return nil
}

// copyOAuthClient copies c; its lists are empty, never nil, as the SQL
// store gives them back.
func copyOAuthClient(c domain.OAuthClient) domain.OAuthClient {
	c.RedirectURIs = append([]string{}, c.RedirectURIs...)
	c.PostLogoutRedirectURIs = append([]string{}, c.PostLogoutRedirectURIs...)
	c.GrantTypes = append([]domain.OAuthGrantType{}, c.GrantTypes...)
	c.Scopes = append([]domain.OAuthScope{}, c.Scopes...)
	c.CreatedAt = normTime(c.CreatedAt)
	c.UpdatedAt = normTime(c.UpdatedAt)
	return c
}
