package application_test

import (
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// A request whose client keeps shorter limits (the web pages) opens a
// session that carries them in the store: its end at most Absolute after
// the sign-in, and an idle limit of Idle plus what may pass between the
// client's last refresh and its last request (an access token's lifetime
// with the verifier's leeway, and the reuse grace). Past either, the
// session is neither listed nor refreshed. Without limits, a session
// keeps the deployment's lifetime and has no idle limit.
func TestLogin_opens_a_session_with_the_request_s_limits(t *testing.T) {
	t.Parallel()
	const absolute, idle = 8 * time.Hour, 30 * time.Minute
	// testConfig's grace is 10 s; EndedSessionKeep is the default.
	storeIdle := idle + application.DefaultEndedSessionKeep + 10*time.Second
	limited := domain.WithRequestMeta(ctx, domain.RequestMeta{SessionLimits: domain.SessionLimits{Absolute: absolute, Idle: idle}})

	for _, tc := range []struct {
		name         string
		limits       domain.SessionLimits
		wantLifetime time.Duration
		wantIdle     time.Duration
	}{
		{"none", domain.SessionLimits{}, 90 * 24 * time.Hour, 0},
		{"pages", domain.SessionLimits{Absolute: absolute, Idle: idle}, absolute, storeIdle},
		{"absolute_beyond_the_deployment_s", domain.SessionLimits{Absolute: 100 * 24 * time.Hour}, 90 * 24 * time.Hour, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			u, _ := e.seed(t, "ada@example.com")
			now := e.clock.Now()
			pair, err := tokensOf(e.auth.Login(domain.WithRequestMeta(ctx, domain.RequestMeta{SessionLimits: tc.limits}),
				application.LoginInput{Email: "ada@example.com", Password: seededPassword}))
			if err != nil {
				t.Fatal(err)
			}
			list, err := e.store.RefreshTokens().Sessions(ctx, u.ID, now)
			if err != nil || len(list) != 1 {
				t.Fatalf("Sessions = %v, %v", list, err)
			}
			if f := list[0]; !f.ExpiresAt.Equal(now.Add(tc.wantLifetime)) || f.IdleTimeout != tc.wantIdle {
				t.Errorf("session ends %s, idle %s; want %s, %s", f.ExpiresAt, f.IdleTimeout, now.Add(tc.wantLifetime), tc.wantIdle)
			}
			if want := now.Add(min(tc.wantLifetime, 30*24*time.Hour)); !pair.RefreshExpiresAt.Equal(want) {
				t.Errorf("refresh token expires %s, want %s", pair.RefreshExpiresAt, want)
			}
		})
	}

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.seed(t, "ada@example.com")
		pair, err := tokensOf(e.auth.Login(limited, application.LoginInput{Email: "ada@example.com", Password: seededPassword}))
		if err != nil {
			t.Fatal(err)
		}
		// Refreshed just within the limit, which then counts from there.
		e.clock.Advance(storeIdle - time.Second)
		pair, err = e.auth.Refresh(ctx, pair.RefreshToken)
		wantErr(t, err, nil)
		e.clock.Advance(storeIdle)
		_, err = e.auth.Refresh(ctx, pair.RefreshToken)
		wantErr(t, err, domain.ErrRefreshTokenInvalid)
	})
}
