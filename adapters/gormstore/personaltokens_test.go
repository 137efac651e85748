package gormstore

import (
	"context"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// TestTokenByHashInTx: inside a transaction TokenByHash reads through
// it, not through its prepared statement on the read pool, and so finds
// a token and user the transaction made; outside, the statement finds
// them once committed, on every backend.
func TestTokenByHashInTx(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			b.require(t)
			db := b.open(t)
			users, tokens := NewUserRepository(db), NewPersonalTokenStore(db)
			now := time.Now().UTC().Truncate(time.Microsecond)
			u := domain.User{ID: domain.NewUserID(now), Name: "Ada", Email: "ada@example.com", PasswordHash: "x",
				Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: now, UpdatedAt: now}
			secret := domain.NewPersonalTokenSecret()
			tok := domain.PersonalToken{ID: domain.NewPersonalTokenID(), UserID: u.ID, Name: "ci",
				Scopes: []domain.TokenScope{domain.ScopeUsersRead}, Hash: domain.HashPersonalToken(secret),
				Prefix: domain.PersonalTokenPrefixOf(secret), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			err := db.WithinTx(t.Context(), func(ctx context.Context) error {
				if err := users.Create(ctx, u); err != nil {
					return err
				}
				if err := tokens.CreateToken(ctx, tok, domain.MaxLivePersonalTokens); err != nil {
					return err
				}
				got, gotUser, err := tokens.TokenByHash(ctx, tok.Hash)
				if err != nil || got.ID != tok.ID || gotUser.ID != u.ID {
					t.Errorf("TokenByHash in the transaction = %+v, %+v, %v; want the token and its user", got, gotUser, err)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("WithinTx: %v", err)
			}
			for range 2 { // the second from the prepared statement
				got, gotUser, err := tokens.TokenByHash(t.Context(), tok.Hash)
				if err != nil || got.ID != tok.ID || gotUser.Email != u.Email || !got.LastUsedAt.IsZero() {
					t.Errorf("TokenByHash after the commit = %+v, %+v, %v; want the token, never used, and its user", got, gotUser, err)
				}
			}
		})
	}
}
