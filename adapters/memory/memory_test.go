package memory_test

import (
	"context"
	"testing"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/contract"
)

func TestUserRepository(t *testing.T) {
	t.Parallel()
	contract.UserRepository(t, func(*testing.T) ports.UserRepository {
		return memory.NewUserRepository()
	})
}

func TestRefreshTokenStore(t *testing.T) {
	t.Parallel()
	contract.RefreshTokenStore(t, func(*testing.T) (ports.UserRepository, ports.RefreshTokenStore) {
		s := memory.NewStore()
		return s.Users(), s.RefreshTokens()
	})
}

func TestLoginAttemptStore(t *testing.T) {
	t.Parallel()
	contract.LoginAttemptStore(t, func(*testing.T) ports.LoginAttemptStore {
		return memory.NewLoginAttemptStore()
	})
}

func TestKeyStore(t *testing.T) {
	t.Parallel()
	contract.KeyStore(t, func(*testing.T) contract.KeyStorage {
		s := memory.NewStore()
		// The box does not matter to the raw access.
		raw := s.Keys(nil)
		return contract.KeyStorage{
			Open:      func(box ports.SecretBox) ports.KeyStore { return s.Keys(box) },
			Stored:    func(_ *testing.T, id string) []byte { return raw.StoredSecret(id) },
			SetStored: func(_ *testing.T, id string, stored []byte) { raw.SetStoredSecret(id, stored) },
			Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) { return s.Keys(box).Reencrypt(ctx) },
		}
	})
}

func TestHealthChecker(t *testing.T) {
	t.Parallel()
	contract.HealthChecker(t, func(*testing.T) ports.HealthChecker { return memory.NewStore() })
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	contract.AuditLog(t, func(*testing.T) ports.AuditLog { return memory.NewAuditLog() })
}

func TestOutbox(t *testing.T) {
	t.Parallel()
	contract.Outbox(t, func(*testing.T) contract.OutboxStorage {
		s := memory.NewStore()
		// The box does not matter to the raw access.
		raw := s.Outbox(nil)
		return contract.OutboxStorage{
			Open:   func(_ *testing.T, box ports.SecretBox) ports.Outbox { return s.Outbox(box) },
			Stored: func(_ *testing.T, id domain.OutboxID) []byte { return raw.StoredPayload(id) },
		}
	})
}

func TestLinkTokenStore(t *testing.T) {
	t.Parallel()
	contract.LinkTokenStore(t, func(*testing.T) (ports.UserRepository, ports.LinkTokenStore) {
		s := memory.NewStore()
		return s.Users(), s.LinkTokens()
	})
}

func TestPersonalTokenStore(t *testing.T) {
	t.Parallel()
	contract.PersonalTokenStore(t, func(*testing.T) (ports.UserRepository, ports.PersonalTokenStore) {
		s := memory.NewStore()
		return s.Users(), s.PersonalTokens()
	})
}

func TestMFAStore(t *testing.T) {
	t.Parallel()
	contract.MFAStore(t, func(*testing.T) contract.MFAStorage {
		s := memory.NewStore()
		// The box does not matter to the raw access.
		raw := s.MFA(nil)
		return contract.MFAStorage{
			Users:     s.Users(),
			Passkeys:  s.Passkeys(),
			Open:      func(box ports.SecretBox) ports.MFAStore { return s.MFA(box) },
			Stored:    func(_ *testing.T, user domain.UserID) []byte { return raw.StoredTOTPSecret(user) },
			SetStored: func(_ *testing.T, user domain.UserID, stored []byte) { raw.SetStoredTOTPSecret(user, stored) },
			Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) { return s.MFA(box).Reencrypt(ctx) },
		}
	})
}

func TestMFAChallengeStore(t *testing.T) {
	t.Parallel()
	contract.MFAChallengeStore(t, func(*testing.T) (ports.UserRepository, ports.MFAChallengeStore) {
		s := memory.NewStore()
		return s.Users(), s.MFAChallenges()
	})
}

func TestPasskeyStore(t *testing.T) {
	t.Parallel()
	contract.PasskeyStore(t, func(*testing.T) (ports.UserRepository, ports.PasskeyStore) {
		s := memory.NewStore()
		return s.Users(), s.Passkeys()
	})
}

func TestTransactor(t *testing.T) {
	t.Parallel()
	contract.Transactor(t, func(t *testing.T) contract.TxStores {
		s := memory.NewStore()
		box, err := secretbox.New(secretbox.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		return contract.TxStores{
			Tx: s, Users: s.Users(), Tokens: s.RefreshTokens(), Attempts: s.LoginAttempts(), Keys: s.Keys(box),
			Audit: memory.NewAuditLog(), Outbox: s.Outbox(box), Links: s.LinkTokens(),
			MFA: s.MFA(box), Challenges: s.MFAChallenges(), Passkeys: s.Passkeys(),
		}
	})
}

func TestUserAccountStatus(t *testing.T) {
	t.Parallel()
	contract.UserAccountStatus(t, func(*testing.T) ports.UserRepository {
		return memory.NewUserRepository()
	})
}

func TestUserMetadata(t *testing.T) {
	t.Parallel()
	contract.UserMetadata(t, func(*testing.T) ports.UserRepository {
		return memory.NewUserRepository()
	})
}

func TestPurger(t *testing.T) {
	t.Parallel()
	contract.Purger(t, func(t *testing.T) contract.PurgeStores {
		s, audit := memory.NewStore(), memory.NewAuditLog()
		box, err := secretbox.New(secretbox.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		return contract.PurgeStores{
			Users: s.Users(), Tokens: s.RefreshTokens(), Attempts: s.LoginAttempts(), Outbox: s.Outbox(box),
			Links: s.LinkTokens(), Challenges: s.MFAChallenges(), Passkeys: s.Passkeys(), Audit: audit,
			Purger: memory.NewPurger(s, audit), Clients: s.OAuthClients(), AuthRequests: s.AuthRequests(),
			PersonalTokens: s.PersonalTokens(),
		}
	})
}

func TestLock(t *testing.T) {
	t.Parallel()
	contract.Lock(t, func(*testing.T) ports.Lock { return memory.NewLock() })
}

func TestOAuthClientStore(t *testing.T) {
	t.Parallel()
	contract.OAuthClientStore(t, func(*testing.T) contract.OAuthClientStorage {
		s := memory.NewStore()
		return contract.OAuthClientStorage{Tx: s, Clients: s.OAuthClients()}
	})
}

// providerStorage is a store's OpenID provider stores for the contract
// suites.
func providerStorage(*testing.T) contract.ProviderStorage {
	s := memory.NewStore()
	return contract.ProviderStorage{
		Tx: s, Users: s.Users(), Clients: s.OAuthClients(), Tokens: s.RefreshTokens(),
		AuthRequests: s.AuthRequests(), Grants: s.Grants(), Revoker: s,
	}
}

func TestAuthRequestStore(t *testing.T) {
	t.Parallel()
	contract.AuthRequestStore(t, providerStorage)
}

func TestGrantStore(t *testing.T) {
	t.Parallel()
	contract.GrantStore(t, providerStorage)
}

func TestOAuthClientRevoker(t *testing.T) {
	t.Parallel()
	contract.OAuthClientRevoker(t, providerStorage)
}

// identityStorage is an empty store's identity providers and identities
// for the contract suites.
func identityStorage(*testing.T) contract.IdentityStorage {
	s := memory.NewStore()
	// The box does not matter to the raw access.
	raw := s.IdentityProviders(nil)
	return contract.IdentityStorage{
		Users:        s.Users(),
		Open:         func(box ports.SecretBox) ports.IdentityProviderStore { return s.IdentityProviders(box) },
		Identities:   s.Identities(),
		StoredSecret: func(_ *testing.T, slug string) []byte { return raw.StoredClientSecret(slug) },
		Reencrypt: func(ctx context.Context, box ports.SecretBox) (int, error) {
			return s.IdentityProviders(box).Reencrypt(ctx)
		},
	}
}

func TestIdentityProviderStore(t *testing.T) {
	t.Parallel()
	contract.IdentityProviderStore(t, identityStorage)
}

func TestUserIdentityStore(t *testing.T) {
	t.Parallel()
	contract.UserIdentityStore(t, identityStorage)
}
