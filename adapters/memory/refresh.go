package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// errFamilyMismatch rejects a token that claims another family (or user)
// than the one it is stored into: a caller bug that would otherwise let a
// session outlive its revocation.
var errFamilyMismatch = errors.New("refresh token does not belong to the family")

// errInvalidAMR rejects a family whose AMR holds an unknown or repeated
// method: a caller bug, which the SQL store could not read back.
var errInvalidAMR = errors.New("unknown or repeated authentication method")

// RefreshTokenStore is the in-memory ports.RefreshTokenStore.
type RefreshTokenStore struct{ s *Store }

var _ ports.RefreshTokenStore = (*RefreshTokenStore)(nil)

// NewRefreshTokenStore returns a refresh-token store over a store of its
// own. As families must reference existing users, it is of little use
// alone: use NewStore and take Users and RefreshTokens from it.
func NewRefreshTokenStore() *RefreshTokenStore { return NewStore().RefreshTokens() }

// CreateFamily implements ports.RefreshTokenStore. It returns
// domain.ErrUserNotFound when the family's user does not exist.
func (r *RefreshTokenStore) CreateFamily(ctx context.Context, f domain.RefreshFamily, first domain.RefreshToken) error {
	if first.FamilyID != f.ID || first.UserID != f.UserID {
		return fmt.Errorf("create refresh family: %w", errFamilyMismatch)
	}
	// As the SQL store keeps it: an empty AMR is AMRPassword.
	amr, ok := domain.ParseAMR(f.AMR)
	if !ok {
		return fmt.Errorf("create refresh family: %w: amr %q", errInvalidAMR, f.AMR)
	}
	f.AMR = amr
	f.LastUsedAt = f.CreatedAt
	s := r.s
	defer s.lock(ctx)()
	if _, ok := s.users[f.UserID]; !ok {
		return fmt.Errorf("create refresh family: %w", domain.ErrUserNotFound)
	}
	if _, ok := s.families[f.ID]; ok {
		return fmt.Errorf("create refresh family: family %w", errDuplicate)
	}
	if _, ok := s.tokens[first.Hash]; ok {
		return fmt.Errorf("create refresh family: token %w", errDuplicate)
	}
	s.families[f.ID] = copyFamily(f)
	s.tokens[first.Hash] = copyToken(first)
	return nil
}

// Lookup implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) Lookup(ctx context.Context, hash string) (domain.RefreshToken, domain.RefreshFamily, error) {
	s := r.s
	defer s.lock(ctx)()
	t, ok := s.tokens[hash]
	if !ok {
		return domain.RefreshToken{}, domain.RefreshFamily{}, fmt.Errorf("look up refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	return copyToken(t), copyFamily(s.families[t.FamilyID]), nil
}

// Rotate implements ports.RefreshTokenStore. It returns
// domain.ErrRefreshTokenInvalid when no token has usedHash.
func (r *RefreshTokenStore) Rotate(ctx context.Context, usedHash string, usedAt time.Time, successor domain.RefreshToken) (bool, error) {
	s := r.s
	defer s.lock(ctx)()
	used, ok := s.tokens[usedHash]
	if !ok {
		return false, fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	if successor.FamilyID != used.FamilyID || successor.UserID != used.UserID {
		return false, fmt.Errorf("rotate refresh token: %w", errFamilyMismatch)
	}
	if s.families[used.FamilyID].RevokedAt != nil {
		return false, fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshFamilyRevoked)
	}
	if !s.families[used.FamilyID].Active(normTime(usedAt)) {
		return false, fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshFamilyLapsed)
	}
	if used.UsedAt != nil {
		return false, nil
	}
	if err := s.rotate(used, usedAt, successor); err != nil {
		return false, fmt.Errorf("rotate refresh token: %w", err)
	}
	return true, nil
}

// RotateOwn implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) RotateOwn(ctx context.Context, usedHash string, usedAt time.Time,
	successor domain.RefreshToken) (domain.RefreshToken, domain.RefreshFamily, bool, error) {
	s := r.s
	defer s.lock(ctx)()
	used, ok := s.tokens[usedHash]
	if !ok {
		return domain.RefreshToken{}, domain.RefreshFamily{}, false,
			fmt.Errorf("rotate refresh token: %w", domain.ErrRefreshTokenInvalid)
	}
	tok, fam := copyToken(used), copyFamily(s.families[used.FamilyID])
	if !tok.RotatableOwn(fam, normTime(usedAt)) {
		return tok, fam, false, nil
	}
	successor.FamilyID, successor.UserID = fam.ID, fam.UserID
	if fam.ExpiresAt.Before(successor.ExpiresAt) {
		successor.ExpiresAt = fam.ExpiresAt
	}
	if err := s.rotate(used, usedAt, successor); err != nil {
		return domain.RefreshToken{}, domain.RefreshFamily{}, false, fmt.Errorf("rotate refresh token: %w", err)
	}
	return tok, fam, true, nil
}

// rotate marks used as used at usedAt with successor as its successor,
// stores successor and sets the family's last use; the caller holds the
// lock and has checked that used may be rotated.
func (s *Store) rotate(used domain.RefreshToken, usedAt time.Time, successor domain.RefreshToken) error {
	if _, ok := s.tokens[successor.Hash]; ok {
		return fmt.Errorf("successor %w", errDuplicate)
	}
	used.UsedAt = normTimePtr(&usedAt)
	used.SuccessorHash = successor.Hash
	s.tokens[used.Hash] = used
	fam := s.families[used.FamilyID]
	fam.LastUsedAt = normTime(usedAt)
	s.families[used.FamilyID] = fam
	s.tokens[successor.Hash] = copyToken(successor)
	return nil
}

// RevokeFamily implements ports.RefreshTokenStore. A family keeps the time
// it was first revoked.
func (r *RefreshTokenStore) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	if f, ok := s.families[familyID]; ok && f.RevokedAt == nil {
		f.RevokedAt = normTimePtr(&at)
		s.families[familyID] = f
	}
	return nil
}

// RevokeUser implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) RevokeUser(ctx context.Context, userID domain.UserID, at time.Time) ([]string, error) {
	s := r.s
	defer s.lock(ctx)()
	var ended []string
	for id, f := range s.families {
		if f.UserID == userID && f.RevokedAt == nil {
			f.RevokedAt = normTimePtr(&at)
			s.families[id] = f
			ended = append(ended, id)
		}
	}
	return ended, nil
}

// Sessions implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) Sessions(ctx context.Context, userID domain.UserID, now time.Time) ([]domain.RefreshFamily, error) {
	s := r.s
	defer s.lock(ctx)()
	var out []domain.RefreshFamily
	for _, f := range s.families {
		if f.UserID == userID && f.Active(now) {
			out = append(out, copyFamily(f))
		}
	}
	domain.SortSessions(out)
	return out, nil
}

// RevokeSession implements ports.RefreshTokenStore.
func (r *RefreshTokenStore) RevokeSession(ctx context.Context, userID domain.UserID, familyID string, at time.Time) error {
	s := r.s
	defer s.lock(ctx)()
	f, ok := s.families[familyID]
	if !ok || f.UserID != userID || !f.Active(at) {
		return fmt.Errorf("revoke session: %w", domain.ErrSessionNotFound)
	}
	f.RevokedAt = normTimePtr(&at)
	s.families[familyID] = f
	return nil
}
