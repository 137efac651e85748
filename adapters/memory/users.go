package memory

import (
	"context"
	"fmt"
	"slices"

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
func (r *UserRepository) Create(_ context.Context, u domain.User) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
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
func (r *UserRepository) CreateMany(_ context.Context, users []domain.User) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
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
func (r *UserRepository) ByID(_ context.Context, id domain.UserID) (domain.User, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return domain.User{}, fmt.Errorf("user by id: %w", domain.ErrUserNotFound)
	}
	return copyUser(u), nil
}

// ByEmail implements ports.UserRepository.
func (r *UserRepository) ByEmail(_ context.Context, email domain.Email) (domain.User, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byEmail[email]
	if !ok {
		return domain.User{}, fmt.Errorf("user by email: %w", domain.ErrUserNotFound)
	}
	return copyUser(s.users[id]), nil
}

// List implements ports.UserRepository. A Limit below 1 is taken as 1.
func (r *UserRepository) List(_ context.Context, q ports.UserListQuery) ([]domain.User, error) {
	limit := max(q.Page.Limit, 1)
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.Email != "" {
		id, ok := s.byEmail[q.Email]
		if !ok || id <= q.Page.After {
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
	end := min(start+limit, len(s.ids))
	out := make([]domain.User, 0, end-start)
	for _, id := range s.ids[start:end] {
		out = append(out, copyUser(s.users[id]))
	}
	return out, nil
}

// Update implements ports.UserRepository. fn runs under the store's lock,
// so it must not call the store.
func (r *UserRepository) Update(_ context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error) {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
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
// deletes the user's refresh-token families and their tokens with it.
func (r *UserRepository) Delete(_ context.Context, id domain.UserID) error {
	s := r.s
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[id]
	if !ok {
		return fmt.Errorf("delete user: %w", domain.ErrUserNotFound)
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
	return nil
}
