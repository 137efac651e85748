package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// UserRepository is the in-memory ports.UserRepository.
type UserRepository struct{ s *Store }

var _ ports.UserRepository = (*UserRepository)(nil)

// NewUserRepository returns a repository over a store of its own. Use
// NewStore when users and refresh tokens must share state.
func NewUserRepository() *UserRepository { return NewStore().Users() }

// Create implements ports.UserRepository.
func (r *UserRepository) Create(ctx context.Context, u domain.User) error {
	s := r.s
	defer s.lock(ctx)()
	if _, taken := s.byEmail[u.Email]; taken {
		return fmt.Errorf("create user: %w", domain.ErrEmailTaken)
	}
	if _, exists := s.users[u.ID]; exists {
		return fmt.Errorf("create user: id %w", errDuplicate)
	}
	s.users[u.ID] = copyUser(u)
	s.byEmail[u.Email] = u.ID
	i, _ := slices.BinarySearch(s.ids, u.ID)
	s.ids = slices.Insert(s.ids, i, u.ID)
	return nil
}

// CreateMany implements ports.UserRepository: every check is made under
// the store's lock before anything is stored, so the users appear all at
// once or not at all.
func (r *UserRepository) CreateMany(ctx context.Context, users []domain.User) error {
	s := r.s
	defer s.lock(ctx)()
	emails := make(map[domain.Email]struct{}, len(users))
	ids := make(map[domain.UserID]struct{}, len(users))
	for _, u := range users {
		if _, taken := s.byEmail[u.Email]; taken {
			return fmt.Errorf("create users: %w", domain.ErrEmailTaken)
		}
		if _, twice := emails[u.Email]; twice {
			return fmt.Errorf("create users: %w", domain.ErrEmailTaken)
		}
		emails[u.Email] = struct{}{}
		_, exists := s.users[u.ID]
		if _, twice := ids[u.ID]; exists || twice {
			return fmt.Errorf("create users: id %w", errDuplicate)
		}
		ids[u.ID] = struct{}{}
	}
	for _, u := range users {
		s.users[u.ID] = copyUser(u)
		s.byEmail[u.Email] = u.ID
		s.ids = append(s.ids, u.ID)
	}
	slices.Sort(s.ids)
	return nil
}

// ByID implements ports.UserRepository.
func (r *UserRepository) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	s := r.s
	defer s.lock(ctx)()
	u, ok := s.users[id]
	if !ok {
		return domain.User{}, fmt.Errorf("user by id: %w", domain.ErrUserNotFound)
	}
	return copyUser(u), nil
}

// ByEmail implements ports.UserRepository.
func (r *UserRepository) ByEmail(ctx context.Context, email domain.Email) (domain.User, error) {
	s := r.s
	defer s.lock(ctx)()
	id, ok := s.byEmail[email]
	if !ok {
		return domain.User{}, fmt.Errorf("user by email: %w", domain.ErrUserNotFound)
	}
	return copyUser(s.users[id]), nil
}

// List implements ports.UserRepository. A Limit below 1 is taken as 1.
func (r *UserRepository) List(ctx context.Context, q ports.UserListQuery) ([]domain.User, error) {
	limit := max(q.Page.Limit, 1)
	s := r.s
	defer s.lock(ctx)()
	if q.Email != "" {
		id, ok := s.byEmail[q.Email]
		if !ok || id <= q.Page.After || !strings.HasPrefix(string(q.Email), q.EmailPrefix) {
			return []domain.User{}, nil
		}
		return []domain.User{copyUser(s.users[id])}, nil
	}
	start := 0
	if q.Page.After != "" {
		// The first id strictly after the cursor; the cursor need not exist.
		i, found := slices.BinarySearch(s.ids, q.Page.After)
		if found {
			i++
		}
		start = i
	}
	out := make([]domain.User, 0, min(limit, len(s.ids)-start))
	for _, id := range s.ids[start:] {
		if len(out) == limit {
			break
		}
		// An empty prefix is a prefix of every email.
		if u := s.users[id]; strings.HasPrefix(string(u.Email), q.EmailPrefix) {
			out = append(out, copyUser(u))
		}
	}
	return out, nil
}

// Update implements ports.UserRepository. fn runs under the store's lock,
// so it must not call the store. The last-admin rule is checked under the
// same lock, so two admins demoting each other at once cannot both
// succeed.
func (r *UserRepository) Update(ctx context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error) {
	s := r.s
	defer s.lock(ctx)()
	old, ok := s.users[id]
	if !ok {
		return domain.User{}, fmt.Errorf("update user: %w", domain.ErrUserNotFound)
	}
	u := copyUser(old)
	if err := fn(&u); err != nil {
		return domain.User{}, err
	}
	u.ID, u.CreatedAt = old.ID, old.CreatedAt
	u = copyUser(u)
	if old.IsEnabledAdmin() && !u.IsEnabledAdmin() && !s.otherEnabledAdmin(id) {
		return domain.User{}, fmt.Errorf("update user: %w", domain.ErrLastAdmin)
	}
	if u.Email != old.Email {
		if _, taken := s.byEmail[u.Email]; taken {
			return domain.User{}, fmt.Errorf("update user: %w", domain.ErrEmailTaken)
		}
		delete(s.byEmail, old.Email)
		s.byEmail[u.Email] = id
	}
	s.users[id] = u
	return copyUser(u), nil
}

// Delete implements ports.UserRepository. Like the SQL foreign keys, it
// deletes the user's refresh-token families and their tokens, the user's
// link tokens, its second factors, mfaTokens, passkeys and passkey
// ceremonies, its grants and authorization requests, its identities at
// the providers, and its personal access tokens, with it.
func (r *UserRepository) Delete(ctx context.Context, id domain.UserID) error {
	s := r.s
	defer s.lock(ctx)()
	u, ok := s.users[id]
	if !ok {
		return fmt.Errorf("delete user: %w", domain.ErrUserNotFound)
	}
	if u.IsEnabledAdmin() && !s.otherEnabledAdmin(id) {
		return fmt.Errorf("delete user: %w", domain.ErrLastAdmin)
	}
	delete(s.users, id)
	delete(s.byEmail, u.Email)
	if i, found := slices.BinarySearch(s.ids, id); found {
		s.ids = slices.Delete(s.ids, i, i+1)
	}
	for fid, f := range s.families {
		if f.UserID == id {
			delete(s.families, fid)
		}
	}
	for hash, t := range s.tokens {
		if _, ok := s.families[t.FamilyID]; !ok {
			delete(s.tokens, hash)
		}
	}
	for hash, t := range s.links {
		if t.UserID == id {
			delete(s.links, hash)
		}
	}
	s.deleteSecondFactors(id)
	s.deleteProviderState(func(u domain.UserID, _ domain.OAuthClientID) bool { return u == id })
	s.deleteIdentitiesOf(id)
	for tid, t := range s.personalTokens {
		if t.UserID == id {
			delete(s.personalTokens, tid)
		}
	}
	return nil
}

// otherEnabledAdmin reports whether a user other than id is an enabled
// admin: the last-admin rule. The caller holds the lock, which keeps the
// answer true until it writes.
func (s *Store) otherEnabledAdmin(id domain.UserID) bool {
	for _, u := range s.users {
		if u.ID != id && u.IsEnabledAdmin() {
			return true
		}
	}
	return false
}
