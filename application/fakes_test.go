package application_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

func newClock() *clock.Manual {
	return clock.NewManual(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
}

// fakeHasher stands in for argon2id: the rules under test are about who may
// do what, not about hashing. Hashes with the prefix "old$" verify but ask
// for a rehash, like bcrypt imports do.
type fakeHasher struct{}

func (fakeHasher) Hash(_ context.Context, pw string) (string, error) { return "fake$" + pw, nil }

func (fakeHasher) Normalize(pw string) string { return pw }

// CheckEncoded accepts the two fake forms, the only ones Verify knows.
func (fakeHasher) CheckEncoded(encoded string) error {
	if strings.HasPrefix(encoded, "fake$") || strings.HasPrefix(encoded, "old$") {
		return nil
	}
	return errors.New("unknown hash format")
}

func (fakeHasher) Verify(_ context.Context, encoded, pw string) (bool, bool, error) {
	switch {
	case strings.HasPrefix(encoded, "fake$"):
		return encoded == "fake$"+pw, false, nil
	case strings.HasPrefix(encoded, "old$"):
		ok := encoded == "old$"+pw
		return ok, ok, nil
	}
	return false, false, errors.New("unknown hash format")
}

// fakeIssuer issues readable tokens: "tok|<id>|<profiles>".
type fakeIssuer struct{ clock ports.Clock }

func (f fakeIssuer) Issue(_ context.Context, u domain.User) (domain.AccessToken, error) {
	return domain.AccessToken{
		Token:     "tok|" + u.ID.String() + "|" + strings.Join(u.Profiles.Strings(), ","),
		ExpiresAt: f.clock.Now().Add(15 * time.Minute),
	}, nil
}

func (fakeIssuer) Verify(_ context.Context, token string) (domain.Principal, error) {
	parts := strings.Split(token, "|")
	if len(parts) != 3 || parts[0] != "tok" {
		return domain.Principal{}, domain.ErrInvalidToken
	}
	ps, err := domain.ParseProfiles(strings.Split(parts[2], ","))
	if err != nil {
		return domain.Principal{}, domain.ErrInvalidToken
	}
	return domain.Principal{UserID: domain.UserID(parts[1]), Profiles: ps}, nil
}

func (fakeIssuer) JWKSJSON() []byte { return []byte(`{"keys":[]}`) }

// env is one isolated set of services over fresh in-memory adapters.
type env struct {
	clock *clock.Manual
	store *memory.Store
	users *application.UserService
	auth  *application.AuthService
}

type envOption func(*application.UserServiceConfig, *application.AuthServiceConfig)

func closedRegistration(u *application.UserServiceConfig, _ *application.AuthServiceConfig) {
	u.OpenRegistration = false
}

func requireCurrentPassword(u *application.UserServiceConfig, _ *application.AuthServiceConfig) {
	u.RequireCurrentPassword = true
}

func noGrace(_ *application.UserServiceConfig, a *application.AuthServiceConfig) {
	a.RefreshReuseGrace = 0
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	clock := newClock()
	store := memory.NewStore()
	ucfg := application.UserServiceConfig{OpenRegistration: true}
	acfg := application.AuthServiceConfig{
		RefreshTTL:        30 * 24 * time.Hour,
		RefreshFamilyTTL:  90 * 24 * time.Hour,
		RefreshReuseGrace: 10 * time.Second,
	}
	for _, o := range opts {
		o(&ucfg, &acfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	users := application.NewUserService(store.Users(), store.RefreshTokens(), store.LoginAttempts(), fakeHasher{}, clock, ucfg, log)
	auth, err := application.NewAuthService(context.Background(), application.AuthDeps{
		Users: store.Users(), Tokens: store.RefreshTokens(), Attempts: store.LoginAttempts(),
		Keys: store.Keys(), Hasher: fakeHasher{}, Issuer: fakeIssuer{clock: clock}, Clock: clock,
	}, acfg, log)
	if err != nil {
		t.Fatalf("new auth service: %v", err)
	}
	return &env{clock: clock, store: store, users: users, auth: auth}
}

var ctx = context.Background()

// seed creates a user directly and returns it with its principal.
func (e *env) seed(t *testing.T, email string, profiles ...domain.Profile) (domain.User, *domain.Principal) {
	t.Helper()
	if len(profiles) == 0 {
		profiles = domain.Profiles{domain.ProfileCustomer}
	}
	// Clock steps keep ids (which start with the creation second) ordered.
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	u := domain.User{
		ID: domain.NewUserID(now), Name: "Seeded", Email: domain.Email(email),
		PasswordHash: "fake$correct horse battery", Profiles: profiles, CreatedAt: now, UpdatedAt: now,
	}
	if err := e.store.Users().Create(ctx, u); err != nil {
		t.Fatalf("seed %s: %v", email, err)
	}
	return u, &domain.Principal{UserID: u.ID, Profiles: u.Profiles}
}

const seededPassword = "correct horse battery"

func ptr[T any](v T) *T { return &v }

func wantErr(t *testing.T, got, want error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("unexpected error: %v", got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("error = %v, want %v", got, want)
	}
}
