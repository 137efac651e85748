package contract

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// ProviderStorage is the OpenID provider's stores over one empty
// storage: its flows and grants, what they reference (users, clients),
// the sessions its clients are granted, the revoker of a client, and the
// storage's Transactor.
type ProviderStorage struct {
	Tx           ports.Transactor
	Users        ports.UserRepository
	Clients      ports.OAuthClientStore
	Tokens       ports.RefreshTokenStore
	AuthRequests ports.AuthRequestStore
	Grants       ports.GrantStore
	Revoker      ports.OAuthClientRevoker
}

// providerSetup returns a storage holding a user and a client.
func providerSetup(t *testing.T, newStorage func(t *testing.T) ProviderStorage) (ProviderStorage, domain.User, domain.OAuthClient) {
	t.Helper()
	s := newStorage(t)
	u, c := newUser(at(0)), newOAuthClient(at(0))
	mustCreate(t, s.Users, u)
	mustCreateClient(t, s.Clients, c)
	return s, u, c
}

// newAuthRequest returns a request of the client made at created, whose
// texts hold what a careless encoding would break.
func newAuthRequest(client domain.OAuthClientID, created time.Time) domain.AuthRequest {
	maxAge := 90*time.Second + 7*time.Microsecond
	return domain.AuthRequest{
		ID:            domain.NewAuthRequestID(),
		ClientID:      client,
		RedirectURI:   `https://app.example.com/cb?q="a,b"&x=%2C`,
		Scopes:        []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail},
		State:         "state, with \"quotes\" — and more",
		Nonce:         randomHex(16),
		CodeChallenge: randomHex(32),
		Prompt:        []string{domain.PromptLogin, domain.PromptConsent},
		MaxAge:        &maxAge,
		ACRValues:     []string{"urn:userd:acr:mfa", "urn:userd:acr:pwd"},
		LoginHint:     "ada@example.com",
		CreatedAt:     created,
		ExpiresAt:     created.Add(domain.AuthRequestTTL),
	}
}

// signedIn is what AttachCode records for r: the user signed in an hour
// before, with a second factor; the code's hash and end.
func signedIn(r domain.AuthRequest, user domain.UserID, now time.Time) (domain.AuthRequest, string) {
	code, hash := domain.NewAuthCode()
	r.UserID, r.AuthTime, r.AMR, r.BrowserSessionID = user, now.Add(-time.Hour), domain.AMRPasswordOTP, randomHex(16)
	r.CodeHash, r.CodeExpiresAt = hash, now.Add(domain.AuthCodeTTL)
	return r, code
}

// checkAuthRequest checks that got is want as stored; lists come back
// empty, never nil.
func checkAuthRequest(t *testing.T, got, want domain.AuthRequest) {
	t.Helper()
	wantAMR := want.AMR
	if want.UserID != "" {
		wantAMR, _ = domain.ParseAMR(want.AMR)
	}
	if got.ID != want.ID || got.ClientID != want.ClientID || got.RedirectURI != want.RedirectURI ||
		!slices.Equal(got.Scopes, want.Scopes) || got.State != want.State || got.Nonce != want.Nonce ||
		got.CodeChallenge != want.CodeChallenge || !slices.Equal(got.Prompt, want.Prompt) ||
		(got.MaxAge == nil) != (want.MaxAge == nil) || (got.MaxAge != nil && *got.MaxAge != *want.MaxAge) ||
		!slices.Equal(got.ACRValues, want.ACRValues) || got.LoginHint != want.LoginHint ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) ||
		got.UserID != want.UserID || !sameTime(got.AuthTime, want.AuthTime) || !slices.Equal(got.AMR, wantAMR) ||
		got.BrowserSessionID != want.BrowserSessionID || got.CodeHash != want.CodeHash ||
		!sameTime(got.CodeExpiresAt, want.CodeExpiresAt) || !sameTimePtr(got.CodeUsedAt, want.CodeUsedAt) ||
		got.IssuedSessionID != want.IssuedSessionID {
		t.Errorf("authorization request mismatch:\n got %+v\nwant %+v", got, want)
	}
	if got.Scopes == nil || got.Prompt == nil || got.ACRValues == nil {
		t.Errorf("authorization request %s has a nil list: %+v", got.ID, got)
	}
}

func mustCreateAuthRequest(t *testing.T, store ports.AuthRequestStore, r domain.AuthRequest) {
	t.Helper()
	if err := store.CreateAuthRequest(t.Context(), r); err != nil {
		t.Fatalf("CreateAuthRequest: %v", err)
	}
}

func mustAttachCode(t *testing.T, store ports.AuthRequestStore, id string, signed domain.AuthRequest, now time.Time) {
	t.Helper()
	if err := store.AttachCode(t.Context(), id, signed, now); err != nil {
		t.Fatalf("AttachCode: %v", err)
	}
}

// requestNotFound checks that no live request without a code has the id
// at now.
func requestNotFound(t *testing.T, store ports.AuthRequestStore, id string, now time.Time) {
	t.Helper()
	if got, err := store.AuthRequest(t.Context(), id, now); !errors.Is(err, domain.ErrAuthRequestNotFound) {
		t.Errorf("AuthRequest(%s) = %+v, %v; want ErrAuthRequestNotFound", id, got, err)
	}
}

// codeInvalid checks that the code with the hash is refused as invalid at
// now.
func codeInvalid(t *testing.T, store ports.AuthRequestStore, hash string, now time.Time) {
	t.Helper()
	if got, err := store.TakeCode(t.Context(), hash, randomHex(16), now); !errors.Is(err, domain.ErrAuthCodeInvalid) {
		t.Errorf("TakeCode = %+v, %v; want ErrAuthCodeInvalid", got, err)
	}
}

// AuthRequestStore runs the contract of ports.AuthRequestStore.
func AuthRequestStore(t *testing.T, newStorage func(t *testing.T) ProviderStorage) {
	t.Run("create_and_read", func(t *testing.T) {
		t.Parallel()
		s, _, c := providerSetup(t, newStorage)
		r := newAuthRequest(c.ID, at(0))
		plain := newAuthRequest(c.ID, at(time.Second))
		plain.Prompt, plain.MaxAge, plain.ACRValues, plain.LoginHint, plain.Nonce = []string{}, nil, nil, "", ""
		mustCreateAuthRequest(t, s.AuthRequests, r)
		mustCreateAuthRequest(t, s.AuthRequests, plain)
		plain.ACRValues = []string{}
		for _, want := range []domain.AuthRequest{r, plain} {
			got, err := s.AuthRequests.AuthRequest(t.Context(), want.ID, want.CreatedAt)
			if err != nil {
				t.Fatalf("AuthRequest: %v", err)
			}
			checkAuthRequest(t, got, want)
			if got.UserID != "" || got.CodeHash != "" || got.CodeUsedAt != nil || got.AMR != nil {
				t.Errorf("a new request has a sign-in or a code: %+v", got)
			}
		}
		// Live until its end, exclusive.
		if _, err := s.AuthRequests.AuthRequest(t.Context(), r.ID, r.ExpiresAt.Add(-time.Microsecond)); err != nil {
			t.Errorf("AuthRequest a microsecond before its end: %v", err)
		}
		requestNotFound(t, s.AuthRequests, r.ID, r.ExpiresAt)
		requestNotFound(t, s.AuthRequests, domain.NewAuthRequestID(), at(0))
		// Its client must exist.
		orphan := newAuthRequest(domain.NewOAuthClientID(at(0)), at(0))
		if err := s.AuthRequests.CreateAuthRequest(t.Context(), orphan); !errors.Is(err, domain.ErrOAuthClientNotFound) {
			t.Errorf("CreateAuthRequest(unknown client) = %v; want ErrOAuthClientNotFound", err)
		}
		requestNotFound(t, s.AuthRequests, orphan.ID, at(0))
	})

	t.Run("attach_code_once", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		r := newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, r)
		signed, _ := signedIn(r, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, r.ID, signed, at(time.Minute))
		// A request with a code is no longer pending.
		requestNotFound(t, s.AuthRequests, r.ID, at(time.Minute))
		again, againCode := signedIn(r, u.ID, at(2*time.Minute))
		if err := s.AuthRequests.AttachCode(t.Context(), r.ID, again, at(2*time.Minute)); !errors.Is(err, domain.ErrAuthRequestNotFound) {
			t.Errorf("AttachCode(again) = %v; want ErrAuthRequestNotFound", err)
		}
		codeInvalid(t, s.AuthRequests, domain.HashAuthCode(againCode), at(2*time.Minute))
		got, err := s.AuthRequests.TakeCode(t.Context(), signed.CodeHash, randomHex(16), at(time.Minute+time.Second))
		if err != nil {
			t.Fatalf("TakeCode: %v", err)
		}
		checkAuthRequest(t, got, signed)

		// Not for an expired request, nor an unknown one; nothing is written.
		late := newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, late)
		lateSigned, _ := signedIn(late, u.ID, late.ExpiresAt)
		if err := s.AuthRequests.AttachCode(t.Context(), late.ID, lateSigned, late.ExpiresAt); !errors.Is(err, domain.ErrAuthRequestNotFound) {
			t.Errorf("AttachCode(expired) = %v; want ErrAuthRequestNotFound", err)
		}
		codeInvalid(t, s.AuthRequests, lateSigned.CodeHash, late.ExpiresAt)
		if _, err := s.AuthRequests.AuthRequest(t.Context(), late.ID, at(0)); err != nil {
			t.Errorf("AuthRequest(after a refused AttachCode): %v", err)
		}
		if err := s.AuthRequests.AttachCode(t.Context(), domain.NewAuthRequestID(), lateSigned, at(0)); !errors.Is(err, domain.ErrAuthRequestNotFound) {
			t.Errorf("AttachCode(unknown) = %v; want ErrAuthRequestNotFound", err)
		}
	})

	t.Run("take_code", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		r := newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, r)
		signed, code := signedIn(r, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, r.ID, signed, at(time.Minute))
		sid, usedAt := randomHex(16), signed.CodeExpiresAt.Add(-time.Microsecond)
		got, err := s.AuthRequests.TakeCode(t.Context(), domain.HashAuthCode(code), sid, usedAt)
		if err != nil {
			t.Fatalf("TakeCode: %v", err)
		}
		// The request as it was before: not used yet.
		checkAuthRequest(t, got, signed)
		// A second use is told apart, with the first use's session, even
		// past the code's end.
		used := signed
		used.CodeUsedAt, used.IssuedSessionID = &usedAt, sid
		for _, when := range []time.Time{usedAt, signed.CodeExpiresAt.Add(time.Hour)} {
			got, err = s.AuthRequests.TakeCode(t.Context(), signed.CodeHash, randomHex(16), when)
			if !errors.Is(err, domain.ErrAuthCodeReused) {
				t.Fatalf("TakeCode(again) = %v; want ErrAuthCodeReused", err)
			}
			checkAuthRequest(t, got, used)
		}
		codeInvalid(t, s.AuthRequests, domain.HashAuthCode("unknown"), at(time.Minute))
		// A code unused at its end is refused, and stays unused.
		late := newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, late)
		lateSigned, _ := signedIn(late, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, late.ID, lateSigned, at(time.Minute))
		codeInvalid(t, s.AuthRequests, lateSigned.CodeHash, lateSigned.CodeExpiresAt)
		codeInvalid(t, s.AuthRequests, lateSigned.CodeHash, lateSigned.CodeExpiresAt.Add(time.Hour))
	})

	t.Run("take_code_concurrent", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		r := newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, r)
		signed, _ := signedIn(r, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, r.ID, signed, at(time.Minute))
		const workers = 12
		sids := make([]string, workers)
		results := make([]domain.AuthRequest, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for i := range workers {
			sids[i] = randomHex(16)
			wg.Go(func() {
				results[i], errs[i] = s.AuthRequests.TakeCode(t.Context(), signed.CodeHash, sids[i], at(time.Minute+time.Second))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("TakeCode succeeded twice (%d and %d)", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, domain.ErrAuthCodeReused):
				t.Errorf("TakeCode %d = %v; want ErrAuthCodeReused", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no TakeCode succeeded")
		}
		for i, err := range errs {
			if err != nil && results[i].IssuedSessionID != sids[winner] {
				t.Errorf("TakeCode %d tells of the session %q; want the winner's %q", i, results[i].IssuedSessionID, sids[winner])
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		pending, coded := newAuthRequest(c.ID, at(0)), newAuthRequest(c.ID, at(0))
		mustCreateAuthRequest(t, s.AuthRequests, pending)
		mustCreateAuthRequest(t, s.AuthRequests, coded)
		signed, _ := signedIn(coded, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, coded.ID, signed, at(time.Minute))
		for _, id := range []string{pending.ID, coded.ID, pending.ID, domain.NewAuthRequestID()} {
			if err := s.AuthRequests.DeleteAuthRequest(t.Context(), id); err != nil {
				t.Errorf("DeleteAuthRequest(%s) = %v", id, err)
			}
		}
		requestNotFound(t, s.AuthRequests, pending.ID, at(0))
		codeInvalid(t, s.AuthRequests, signed.CodeHash, at(time.Minute))
	})

	t.Run("deleted_with_their_user_or_client", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		other := newOAuthClient(at(time.Second))
		mustCreateClient(t, s.Clients, other)
		ofUser, ofClient := newAuthRequest(other.ID, at(0)), newAuthRequest(c.ID, at(0))
		kept := newAuthRequest(other.ID, at(0))
		for _, r := range []domain.AuthRequest{ofUser, ofClient, kept} {
			mustCreateAuthRequest(t, s.AuthRequests, r)
		}
		signed, _ := signedIn(ofUser, u.ID, at(time.Minute))
		mustAttachCode(t, s.AuthRequests, ofUser.ID, signed, at(time.Minute))
		if err := s.Users.Delete(t.Context(), u.ID); err != nil {
			t.Fatal(err)
		}
		codeInvalid(t, s.AuthRequests, signed.CodeHash, at(time.Minute))
		if err := s.Clients.Delete(t.Context(), c.ID); err != nil {
			t.Fatal(err)
		}
		requestNotFound(t, s.AuthRequests, ofClient.ID, at(0))
		if _, err := s.AuthRequests.AuthRequest(t.Context(), kept.ID, at(0)); err != nil {
			t.Errorf("AuthRequest(another's) = %v", err)
		}
	})

	t.Run("transaction", func(t *testing.T) {
		t.Parallel()
		s, u, c := providerSetup(t, newStorage)
		r := newAuthRequest(c.ID, at(0))
		signed, _ := signedIn(r, u.ID, at(time.Minute))
		err := withinTx(t, s.Tx, func(ctx context.Context) error {
			if err := s.AuthRequests.CreateAuthRequest(ctx, r); err != nil {
				return err
			}
			if err := s.AuthRequests.AttachCode(ctx, r.ID, signed, at(time.Minute)); err != nil {
				return err
			}
			if _, err := s.AuthRequests.TakeCode(ctx, signed.CodeHash, randomHex(16), at(time.Minute)); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v; want errRollback", err)
		}
		requestNotFound(t, s.AuthRequests, r.ID, at(0))
		codeInvalid(t, s.AuthRequests, signed.CodeHash, at(time.Minute))
	})
}
