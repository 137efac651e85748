package contract

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newPersonalToken returns a token of the user, made at created for
// ninety days, with a hash unique to it.
func newPersonalToken(user domain.UserID, created time.Time) domain.PersonalToken {
	secret := domain.NewPersonalTokenSecret()
	return domain.PersonalToken{
		ID:        domain.NewPersonalTokenID(),
		UserID:    user,
		Name:      "script " + randomHex(3),
		Scopes:    []domain.TokenScope{domain.ScopeUsersRead},
		Hash:      domain.HashPersonalToken(secret),
		Prefix:    domain.PersonalTokenPrefixOf(secret),
		CreatedAt: created,
		ExpiresAt: created.Add(domain.DefaultPersonalTokenDays * 24 * time.Hour),
	}
}

func checkPersonalToken(t *testing.T, got, want domain.PersonalToken) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.Name != want.Name || !slices.Equal(got.Scopes, want.Scopes) ||
		got.Hash != want.Hash || got.Prefix != want.Prefix || !sameTime(got.CreatedAt, want.CreatedAt) ||
		!sameTime(got.ExpiresAt, want.ExpiresAt) || !sameTime(got.LastUsedAt, want.LastUsedAt) ||
		!sameTimePtr(got.RevokedAt, want.RevokedAt) {
		t.Errorf("personal token mismatch:\n got %+v (revoked %s)\nwant %+v (revoked %s)",
			got, fmtTimePtr(got.RevokedAt), want, fmtTimePtr(want.RevokedAt))
	}
}

func mustCreateToken(t *testing.T, store ports.PersonalTokenStore, tok domain.PersonalToken) {
	t.Helper()
	if err := store.CreateToken(t.Context(), tok, domain.MaxLivePersonalTokens); err != nil {
		t.Fatalf("CreateToken(%s): %v", tok.ID, err)
	}
}

// mustRevokeToken revokes tok at when, and notes it in tok.
func mustRevokeToken(t *testing.T, store ports.PersonalTokenStore, tok *domain.PersonalToken, when time.Time) {
	t.Helper()
	if err := store.RevokeToken(t.Context(), tok.UserID, tok.ID, when); err != nil {
		t.Fatalf("RevokeToken(%s): %v", tok.ID, err)
	}
	tok.RevokedAt = &when
}

// checkTokens checks that the user's live tokens at now are want, in
// order.
func checkTokens(t *testing.T, store ports.PersonalTokenStore, user domain.UserID, now time.Time, want ...domain.PersonalToken) {
	t.Helper()
	got, err := store.Tokens(t.Context(), user, now)
	if err != nil {
		t.Fatalf("Tokens(%s): %v", user, err)
	}
	if got == nil || len(got) != len(want) {
		t.Fatalf("Tokens(%s) = %+v, want %d tokens (empty, not nil, for none)", user, got, len(want))
	}
	for i := range want {
		checkPersonalToken(t, got[i], want[i])
	}
}

// tokenByHash checks that TokenByHash finds want with its user.
func tokenByHash(t *testing.T, store ports.PersonalTokenStore, want domain.PersonalToken, user domain.User) {
	t.Helper()
	got, u, err := store.TokenByHash(t.Context(), want.Hash)
	if err != nil {
		t.Fatalf("TokenByHash(%s): %v", want.ID, err)
	}
	checkPersonalToken(t, got, want)
	checkUser(t, u, user)
}

// PersonalTokenStore runs the contract of ports.PersonalTokenStore over
// the stores that newStores makes, sharing one storage.
func PersonalTokenStore(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.PersonalTokenStore)) {
	// setup returns the stores with two users: the one whose tokens a
	// case makes, and another.
	setup := func(t *testing.T) (ports.UserRepository, ports.PersonalTokenStore, domain.User, domain.User) {
		users, tokens := newStores(t)
		u, other := newUser(at(0)), newUser(at(time.Second))
		mustCreate(t, users, u)
		mustCreate(t, users, other)
		return users, tokens, u, other
	}

	t.Run("create_and_find_by_hash", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		tok := newPersonalToken(u.ID, at(time.Second))
		tok.Scopes = []domain.TokenScope{domain.ScopeUsersRead, domain.ScopeUsersWrite}
		mustCreateToken(t, tokens, tok)
		tokenByHash(t, tokens, tok, u)
		if _, _, err := tokens.TokenByHash(t.Context(), domain.HashPersonalToken(domain.NewPersonalTokenSecret())); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
			t.Errorf("TokenByHash(unknown) = %v, want ErrPersonalTokenNotFound", err)
		}
	})

	t.Run("tokens_live_only_newest_first", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, other := setup(t)
		old, mid, last := newPersonalToken(u.ID, at(time.Second)), newPersonalToken(u.ID, at(time.Minute)), newPersonalToken(u.ID, at(time.Hour))
		// Two made at one instant: the greater id first.
		twin := newPersonalToken(u.ID, at(time.Hour))
		expired := newPersonalToken(u.ID, at(0))
		expired.ExpiresAt = at(2 * time.Hour)
		revoked := newPersonalToken(u.ID, at(time.Minute))
		others := newPersonalToken(other.ID, at(time.Minute))
		for _, tok := range []domain.PersonalToken{mid, expired, last, old, twin, revoked, others} {
			mustCreateToken(t, tokens, tok)
		}
		mustRevokeToken(t, tokens, &revoked, at(90*time.Minute))
		first, second := last, twin
		if twin.ID > last.ID {
			first, second = twin, last
		}
		// Before its end the expired one is live; a revoked one is not,
		// whenever asked.
		checkTokens(t, tokens, u.ID, at(time.Hour), first, second, mid, old, expired)
		// At its end, expired is no longer live.
		checkTokens(t, tokens, u.ID, at(2*time.Hour), first, second, mid, old)
		checkTokens(t, tokens, other.ID, at(2*time.Hour), others)
		checkTokens(t, tokens, "unknown-user", at(0))
	})

	t.Run("the_limit_counts_live_tokens_only", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		const limit = 3
		create := func(tok domain.PersonalToken) error { return tokens.CreateToken(t.Context(), tok, limit) }
		expired := newPersonalToken(u.ID, at(0))
		expired.ExpiresAt = at(time.Hour)
		revoked := newPersonalToken(u.ID, at(0))
		for _, tok := range []domain.PersonalToken{expired, revoked, newPersonalToken(u.ID, at(0))} {
			if err := create(tok); err != nil {
				t.Fatalf("CreateToken: %v", err)
			}
		}
		// Three live a microsecond before expired's end.
		refused := newPersonalToken(u.ID, at(time.Hour-time.Microsecond))
		if err := create(refused); !errors.Is(err, domain.ErrTokenLimit) {
			t.Fatalf("CreateToken(a fourth live) = %v, want ErrTokenLimit", err)
		}
		// At the hour, expired no longer counts; one more fits.
		if err := create(newPersonalToken(u.ID, at(time.Hour))); err != nil {
			t.Fatalf("CreateToken(after one expired) = %v", err)
		}
		if err := create(newPersonalToken(u.ID, at(time.Hour))); !errors.Is(err, domain.ErrTokenLimit) {
			t.Fatalf("CreateToken(over the limit again) = %v, want ErrTokenLimit", err)
		}
		mustRevokeToken(t, tokens, &revoked, at(2*time.Hour))
		if err := create(newPersonalToken(u.ID, at(2*time.Hour))); err != nil {
			t.Fatalf("CreateToken(after one revoked) = %v", err)
		}
		if got, err := tokens.Tokens(t.Context(), u.ID, at(2*time.Hour)); err != nil || len(got) != limit {
			t.Errorf("Tokens = %d tokens, %v; want %d", len(got), err, limit)
		}
		// A refused token was not stored.
		if _, _, err := tokens.TokenByHash(t.Context(), refused.Hash); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
			t.Errorf("TokenByHash(refused) = %v, want ErrPersonalTokenNotFound", err)
		}
	})

	// More creations at once than the limit allows, as from several
	// nodes: exactly the limit is stored, the rest refused.
	t.Run("concurrent_creations_hold_the_limit", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		const workers = domain.MaxLivePersonalTokens + 10
		var refused atomic.Int32
		updateConcurrently(t, workers, "CreateToken", func(i int) error {
			err := tokens.CreateToken(t.Context(), newPersonalToken(u.ID, at(time.Duration(i)*time.Millisecond)), domain.MaxLivePersonalTokens)
			if errors.Is(err, domain.ErrTokenLimit) {
				refused.Add(1)
				return nil
			}
			return err
		})
		got, err := tokens.Tokens(t.Context(), u.ID, at(time.Minute))
		if err != nil || len(got) != domain.MaxLivePersonalTokens {
			t.Fatalf("Tokens = %d tokens, %v; want %d", len(got), err, domain.MaxLivePersonalTokens)
		}
		if n := refused.Load(); n != workers-domain.MaxLivePersonalTokens {
			t.Errorf("%d creations refused, want %d", n, workers-domain.MaxLivePersonalTokens)
		}
	})

	t.Run("create_for_an_unknown_user", func(t *testing.T) {
		t.Parallel()
		_, tokens, _, _ := setup(t)
		tok := newPersonalToken(domain.NewUserID(at(0)), at(0))
		if err := tokens.CreateToken(t.Context(), tok, domain.MaxLivePersonalTokens); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreateToken(unknown user) = %v, want ErrUserNotFound", err)
		}
		if _, _, err := tokens.TokenByHash(t.Context(), tok.Hash); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
			t.Errorf("TokenByHash(refused) = %v, want ErrPersonalTokenNotFound", err)
		}
	})

	t.Run("by_hash_whatever_the_state", func(t *testing.T) {
		t.Parallel()
		users, tokens, u, _ := setup(t)
		expired := newPersonalToken(u.ID, at(0))
		expired.ExpiresAt = at(time.Hour)
		revoked := newPersonalToken(u.ID, at(0))
		mustCreateToken(t, tokens, expired)
		mustCreateToken(t, tokens, revoked)
		mustRevokeToken(t, tokens, &revoked, at(time.Minute))
		disabled, err := users.Update(t.Context(), u.ID, func(u *domain.User) error {
			u.Disabled, u.UpdatedAt = true, at(time.Minute)
			return nil
		})
		if err != nil {
			t.Fatalf("Update(disable): %v", err)
		}
		// The caller judges: the store answers the token and its user as
		// they are.
		tokenByHash(t, tokens, expired, disabled)
		tokenByHash(t, tokens, revoked, disabled)
	})

	t.Run("revoke_only_ones_own_live_token_once", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, other := setup(t)
		tok := newPersonalToken(u.ID, at(0))
		expired := newPersonalToken(u.ID, at(0))
		expired.ExpiresAt = at(time.Hour)
		mustCreateToken(t, tokens, tok)
		mustCreateToken(t, tokens, expired)
		notFound := func(user domain.UserID, id domain.PersonalTokenID, when time.Time, what string) {
			t.Helper()
			if err := tokens.RevokeToken(t.Context(), user, id, when); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
				t.Errorf("RevokeToken(%s) = %v, want ErrPersonalTokenNotFound", what, err)
			}
		}
		notFound(other.ID, tok.ID, at(time.Minute), "another user's")
		notFound(u.ID, domain.NewPersonalTokenID(), at(time.Minute), "unknown")
		notFound(u.ID, expired.ID, at(time.Hour), "expired")
		mustRevokeToken(t, tokens, &tok, at(time.Minute))
		notFound(u.ID, tok.ID, at(2*time.Minute), "twice")
		tokenByHash(t, tokens, tok, u)
		// The expired one was left as it was.
		tokenByHash(t, tokens, expired, u)
	})

	t.Run("concurrent_revocations_one_wins", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		tok := newPersonalToken(u.ID, at(0))
		mustCreateToken(t, tokens, tok)
		const workers = 8
		var won atomic.Int32
		updateConcurrently(t, workers, "RevokeToken", func(i int) error {
			err := tokens.RevokeToken(t.Context(), u.ID, tok.ID, at(time.Duration(i+1)*time.Second))
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, domain.ErrPersonalTokenNotFound):
				return err
			}
			return nil
		})
		if n := won.Load(); n != 1 {
			t.Errorf("%d revocations won, want exactly 1", n)
		}
	})

	t.Run("touch_at_most_once_a_minute", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		tok := newPersonalToken(u.ID, at(0))
		mustCreateToken(t, tokens, tok)
		tokenByHash(t, tokens, tok, u) // never used: the zero time
		touch := func(when time.Time, want time.Time) {
			t.Helper()
			if err := tokens.TouchToken(t.Context(), tok.ID, when); err != nil {
				t.Fatalf("TouchToken(%s): %v", when, err)
			}
			tok.LastUsedAt = want
			tokenByHash(t, tokens, tok, u)
		}
		touch(at(time.Second), at(time.Second))
		touch(at(time.Minute), at(time.Second))             // a minute later exactly: not yet
		touch(at(time.Minute+time.Second), at(time.Second)) // still within the minute's end
		touch(at(time.Minute+time.Second+time.Microsecond), at(time.Minute+time.Second+time.Microsecond))
		touch(at(30*time.Second), at(time.Minute+time.Second+time.Microsecond)) // never backwards
		if err := tokens.TouchToken(t.Context(), domain.NewPersonalTokenID(), at(time.Hour)); err != nil {
			t.Errorf("TouchToken(unknown) = %v, want nil", err)
		}
	})

	t.Run("deleted_with_the_user", func(t *testing.T) {
		t.Parallel()
		users, tokens, u, other := setup(t)
		tok, kept := newPersonalToken(u.ID, at(0)), newPersonalToken(other.ID, at(0))
		mustCreateToken(t, tokens, tok)
		mustCreateToken(t, tokens, kept)
		if err := users.Delete(t.Context(), u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, _, err := tokens.TokenByHash(t.Context(), tok.Hash); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
			t.Errorf("TokenByHash(deleted user's) = %v, want ErrPersonalTokenNotFound", err)
		}
		checkTokens(t, tokens, u.ID, at(0))
		tokenByHash(t, tokens, kept, other)
	})

	t.Run("the_same_hash_twice_is_refused", func(t *testing.T) {
		t.Parallel()
		_, tokens, u, _ := setup(t)
		tok := newPersonalToken(u.ID, at(0))
		mustCreateToken(t, tokens, tok)
		again := newPersonalToken(u.ID, at(time.Second))
		again.Hash = tok.Hash
		if err := tokens.CreateToken(t.Context(), again, domain.MaxLivePersonalTokens); err == nil ||
			errors.Is(err, domain.ErrTokenLimit) || errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreateToken(a hash stored already) = %v, want an error of its own", err)
		}
		checkTokens(t, tokens, u.ID, at(time.Second), tok)
	})
}
