package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// AuthRequestStore is the in-memory ports.AuthRequestStore.
type AuthRequestStore struct{ s *Store }

var _ ports.AuthRequestStore = (*AuthRequestStore)(nil)

// CreateAuthRequest implements ports.AuthRequestStore. As the SQL store,
// it keeps only what was asked, whatever else r holds, and returns
// domain.ErrOAuthClientNotFound when the client does not exist.
func (a *AuthRequestStore) CreateAuthRequest(ctx context.Context, r domain.AuthRequest) error {
	s := a.s
	defer s.lock(ctx)()
	if _, ok := s.clients[r.ClientID]; !ok {
		return fmt.Errorf("create authorization request: %w", domain.ErrOAuthClientNotFound)
	}
	if _, ok := s.authRequests[r.ID]; ok {
		return fmt.Errorf("create authorization request: id %w", errDuplicate)
	}
	asked := domain.AuthRequest{
		ID: r.ID, ClientID: r.ClientID, RedirectURI: r.RedirectURI, Scopes: r.Scopes, State: r.State, Nonce: r.Nonce,
		CodeChallenge: r.CodeChallenge, Prompt: r.Prompt, MaxAge: r.MaxAge, ACRValues: r.ACRValues, LoginHint: r.LoginHint,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
	}
	s.authRequests[r.ID] = copyAuthRequest(asked)
	return nil
}

// AuthRequest implements ports.AuthRequestStore.
func (a *AuthRequestStore) AuthRequest(ctx context.Context, id string, now time.Time) (domain.AuthRequest, error) {
	s := a.s
	defer s.lock(ctx)()
	r, ok := s.authRequests[id]
	if !ok || !r.Live(normTime(now)) || r.CodeHash != "" {
		return domain.AuthRequest{}, fmt.Errorf("authorization request: %w", domain.ErrAuthRequestNotFound)
	}
	return copyAuthRequest(r), nil
}

// AttachCode implements ports.AuthRequestStore, with the SQL store's
// checks: signed names a user that exists and a code hash no other
// request has, and holds an AMR that domain.ParseAMR accepts.
func (a *AuthRequestStore) AttachCode(ctx context.Context, id string, signed domain.AuthRequest, now time.Time) error {
	amr, ok := domain.ParseAMR(signed.AMR)
	switch {
	case !ok:
		return fmt.Errorf("attach code: %w: amr %q", errInvalidAMR, signed.AMR)
	case signed.UserID == "" || signed.CodeHash == "":
		return errors.New("attach code: no user or no code hash")
	}
	s := a.s
	defer s.lock(ctx)()
	if _, ok := s.users[signed.UserID]; !ok {
		return fmt.Errorf("attach code: %w", domain.ErrUserNotFound)
	}
	r, ok := s.authRequests[id]
	if !ok || !r.Live(normTime(now)) || r.CodeHash != "" {
		return fmt.Errorf("attach code: %w", domain.ErrAuthRequestNotFound)
	}
	if _, taken := s.requestByCode(signed.CodeHash); taken {
		return fmt.Errorf("attach code: code hash %w", errDuplicate)
	}
	r.UserID, r.AuthTime, r.AMR, r.BrowserSessionID = signed.UserID, signed.AuthTime, amr, signed.BrowserSessionID
	r.CodeHash, r.CodeExpiresAt = signed.CodeHash, signed.CodeExpiresAt
	s.authRequests[id] = copyAuthRequest(r)
	return nil
}

// requestByCode finds the request with the code hash; the caller holds
// the lock. A scan: the store holds the flows of minutes.
func (s *Store) requestByCode(hash string) (domain.AuthRequest, bool) {
	for _, r := range s.authRequests {
		if r.CodeHash == hash {
			return r, true
		}
	}
	return domain.AuthRequest{}, false
}

// TakeCode implements ports.AuthRequestStore under the store's lock,
// which makes concurrent calls take turns.
func (a *AuthRequestStore) TakeCode(ctx context.Context, codeHash, issuedSession string, now time.Time) (domain.AuthRequest, error) {
	s := a.s
	defer s.lock(ctx)()
	r, ok := s.requestByCode(codeHash)
	switch {
	case ok && r.CodeUsedAt != nil:
		return copyAuthRequest(r), fmt.Errorf("take code: %w", domain.ErrAuthCodeReused)
	case !ok || !normTime(now).Before(r.CodeExpiresAt):
		return domain.AuthRequest{}, fmt.Errorf("take code: %w", domain.ErrAuthCodeInvalid)
	}
	before := copyAuthRequest(r)
	r.CodeUsedAt, r.IssuedSessionID = normTimePtr(&now), issuedSession
	s.authRequests[r.ID] = copyAuthRequest(r)
	return before, nil
}

// DeleteAuthRequest implements ports.AuthRequestStore.
func (a *AuthRequestStore) DeleteAuthRequest(ctx context.Context, id string) error {
	s := a.s
	defer s.lock(ctx)()
	delete(s.authRequests, id)
	return nil
}

// copyAuthRequest copies r as the SQL store gives it back: lists empty,
// never nil; times and MaxAge to the microsecond.
func copyAuthRequest(r domain.AuthRequest) domain.AuthRequest {
	r.Scopes = append([]domain.OAuthScope{}, r.Scopes...)
	r.Prompt = append([]string{}, r.Prompt...)
	r.ACRValues = append([]string{}, r.ACRValues...)
	if r.MaxAge != nil {
		d := r.MaxAge.Truncate(time.Microsecond)
		r.MaxAge = &d
	}
	r.AMR = r.AMR.Clone()
	r.CreatedAt = normTime(r.CreatedAt)
	r.ExpiresAt = normTime(r.ExpiresAt)
	r.AuthTime = normTime(r.AuthTime)
	r.CodeExpiresAt = normTime(r.CodeExpiresAt)
	r.CodeUsedAt = normTimePtr(r.CodeUsedAt)
	return r
}

// deleteProviderState removes the grants and authorization requests of
// the users and clients that gone chooses, as the SQL foreign keys do
// when a user or a client is deleted; the caller holds the lock.
func (s *Store) deleteProviderState(gone func(domain.UserID, domain.OAuthClientID) bool) {
	for k := range s.grants {
		if gone(k.user, k.client) {
			delete(s.grants, k)
		}
	}
	for id, r := range s.authRequests {
		// A request no one signed in for yet has no user: only its
		// client decides.
		if gone(r.UserID, r.ClientID) {
			delete(s.authRequests, id)
		}
	}
}
