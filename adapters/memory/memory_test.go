package memory_test

import (
	"context"
	"testing"

	"github.com/userd/userd/adapters/memory"
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
