package memory_test

import (
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
	contract.KeyStore(t, func(*testing.T) ports.KeyStore { return memory.NewKeyStore() })
}

func TestHealthChecker(t *testing.T) {
	t.Parallel()
	contract.HealthChecker(t, func(*testing.T) ports.HealthChecker { return memory.NewStore() })
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	contract.AuditLog(t, func(*testing.T) ports.AuditLog { return memory.NewAuditLog() })
}
