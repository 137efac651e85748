// Package memory implements the storage ports in process memory, for tests
// and for USERD_DB_DRIVER=memory. It mirrors the SQL store as closely as is
// useful: times are kept in UTC at microsecond precision, refresh-token
// families reference existing users, and deleting a user deletes its
// families and tokens. Everything lives in one Store so that such cascades
// are possible; the per-port types are views onto it.
//
// Values are copied on the way in and out, so a caller can never change
// stored state through a slice or pointer it handed over or got back.
package memory

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// errDuplicate is returned when a key that must be unique (a refresh-token
// hash, a family or signing-key id) is stored twice. No domain error fits:
// it means a bug in the caller, not a condition a client can cause.
var errDuplicate = errors.New("already exists")

// Store holds every map of the in-memory store behind one mutex. One lock
// for everything keeps cascades (user deletion) and cross-map checks
// (families reference users) trivially atomic; contention does not matter
// at the scale this store is meant for.
type Store struct {
	mu sync.Mutex

	users   map[domain.UserID]domain.User
	byEmail map[domain.Email]domain.UserID
	// ids holds every user id in ascending order, so that List can seek to
	// a cursor instead of sorting the whole map on every page.
	ids []domain.UserID

	families map[string]domain.RefreshFamily
	tokens   map[string]domain.RefreshToken

	attempts map[domain.Email]domain.LoginAttempts

	keys map[string]domain.SigningKey
}

var _ ports.HealthChecker = (*Store)(nil)

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		users:    make(map[domain.UserID]domain.User),
		byEmail:  make(map[domain.Email]domain.UserID),
		families: make(map[string]domain.RefreshFamily),
		tokens:   make(map[string]domain.RefreshToken),
		attempts: make(map[domain.Email]domain.LoginAttempts),
		keys:     make(map[string]domain.SigningKey),
	}
}

// Users returns the store's user repository.
func (s *Store) Users() *UserRepository { return &UserRepository{s: s} }

// RefreshTokens returns the store's refresh-token store. Its families can
// only reference users of the same Store.
func (s *Store) RefreshTokens() *RefreshTokenStore { return &RefreshTokenStore{s: s} }

// LoginAttempts returns the store's login-attempt counter.
func (s *Store) LoginAttempts() *LoginAttemptStore { return &LoginAttemptStore{s: s} }

// Keys returns the store's key store, sealing and opening secrets with
// box. Views with different boxes share the keys.
func (s *Store) Keys(box ports.SecretBox) *KeyStore { return &KeyStore{s: s, box: box} }

// Ping always succeeds: memory is always there.
func (s *Store) Ping(context.Context) error { return nil }

// normTime drops what the SQL store cannot keep (sub-microsecond digits,
// the location, the monotonic reading), so that code tested against this
// store sees the same values it will see in production.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// normTimePtr is normTime for optional times; it always returns a fresh
// pointer, never the caller's.
func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

func copyUser(u domain.User) domain.User {
	// Canonical returns a fresh slice, sorted and without duplicates, as the
	// SQL store keeps it.
	u.Profiles = u.Profiles.Canonical()
	u.CreatedAt = normTime(u.CreatedAt)
	u.UpdatedAt = normTime(u.UpdatedAt)
	return u
}

func copyFamily(f domain.RefreshFamily) domain.RefreshFamily {
	f.CreatedAt = normTime(f.CreatedAt)
	f.ExpiresAt = normTime(f.ExpiresAt)
	f.RevokedAt = normTimePtr(f.RevokedAt)
	return f
}

func copyToken(t domain.RefreshToken) domain.RefreshToken {
	t.IssuedAt = normTime(t.IssuedAt)
	t.ExpiresAt = normTime(t.ExpiresAt)
	t.UsedAt = normTimePtr(t.UsedAt)
	return t
}

func copyKey(k domain.SigningKey) domain.SigningKey {
	k.Secret = slices.Clone(k.Secret)
	k.CreatedAt = normTime(k.CreatedAt)
	return k
}
