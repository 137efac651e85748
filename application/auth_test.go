package application_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/logbuf"
)

func login(t *testing.T, e *env, email, password string) application.TokenPair {
	t.Helper()
	pair, err := tokensOf(e.auth.Login(ctx, application.LoginInput{Email: email, Password: password}))
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	return pair
}

func TestLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, _ := e.seed(t, "ada@example.com")
	pair := login(t, e, "  ADA@example.com", seededPassword)
	if pair.User.ID != u.ID || pair.Access.Token == "" || pair.RefreshToken == "" {
		t.Fatalf("pair = %+v", pair)
	}
	if want := e.clock.Now().Add(30 * 24 * time.Hour); !pair.RefreshExpiresAt.Equal(want) {
		t.Fatalf("refresh expires %v, want %v", pair.RefreshExpiresAt, want)
	}
	p, err := e.auth.Authenticate(ctx, pair.Access.Token)
	wantErr(t, err, nil)
	if p.UserID != u.ID {
		t.Fatalf("principal %s, want %s", p.UserID, u.ID)
	}
	_, err = e.auth.Authenticate(ctx, "garbage")
	wantErr(t, err, domain.ErrInvalidToken)
}

func TestLogin_unknown_email_and_wrong_password_are_one_error(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	_, wrongPassword := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "not it at all"})
	_, unknownEmail := e.auth.Login(ctx, application.LoginInput{Email: "nobody@example.com", Password: "not it at all"})
	wantErr(t, wrongPassword, domain.ErrInvalidCredentials)
	wantErr(t, unknownEmail, domain.ErrInvalidCredentials)
	if wrongPassword.Error() != unknownEmail.Error() {
		t.Fatalf("errors differ: %q vs %q", wrongPassword, unknownEmail)
	}
}

func TestLogin_empty_fields_are_validation_errors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.auth.Login(ctx, application.LoginInput{})
	var verr *domain.ValidationError
	if !errors.As(err, &verr) || len(verr.Fields) != 2 {
		t.Fatalf("error = %v", err)
	}
}

func TestLogin_throttle(t *testing.T) {
	t.Parallel()
	for _, email := range []string{"ada@example.com", "ghost@example.com"} {
		t.Run(email, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.seed(t, "ada@example.com")
			for i := range domain.LoginFreeFailures {
				_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: "wrong password"})
				if !errors.Is(err, domain.ErrInvalidCredentials) {
					t.Fatalf("failure %d: %v", i+1, err)
				}
			}
			// Locked: even the right password is not checked.
			var tooMany *domain.TooManyAttemptsError
			_, err := e.auth.Login(ctx, application.LoginInput{Email: email, Password: seededPassword})
			if !errors.As(err, &tooMany) || tooMany.RetryAfter != 30*time.Second {
				t.Fatalf("error = %v, want 30s lock", err)
			}
			// Refused attempts do not count: still 30 s after some more.
			e.clock.Advance(10 * time.Second)
			_, err = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "wrong password"})
			if !errors.As(err, &tooMany) || tooMany.RetryAfter != 20*time.Second {
				t.Fatalf("error = %v, want 20s left", err)
			}
			// After the delay, another failure doubles it.
			e.clock.Advance(21 * time.Second)
			_, err = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "wrong password"})
			wantErr(t, err, domain.ErrInvalidCredentials)
			_, err = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "wrong password"})
			if !errors.As(err, &tooMany) || tooMany.RetryAfter != 60*time.Second {
				t.Fatalf("error = %v, want 60s lock", err)
			}
			// A day without failures forgets them.
			e.clock.Advance(24*time.Hour + time.Minute)
			_, err = e.auth.Login(ctx, application.LoginInput{Email: email, Password: "wrong password"})
			wantErr(t, err, domain.ErrInvalidCredentials)
		})
	}
}

func TestLogin_success_resets_failures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	for range domain.LoginFreeFailures - 1 {
		_, _ = e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "wrong password"})
	}
	login(t, e, "ada@example.com", seededPassword)
	for range domain.LoginFreeFailures - 1 {
		_, _ = e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "wrong password"})
	}
	login(t, e, "ada@example.com", seededPassword)
}

func TestLogin_delay_caps_at_15_minutes(t *testing.T) {
	t.Parallel()
	a := domain.LoginAttempts{Failures: 40, LastFailureAt: time.Unix(0, 0)}
	if got := a.RetryAfter(time.Unix(0, 0)); got != 15*time.Minute {
		t.Fatalf("retry after %v", got)
	}
}

func TestLogin_rehashes_old_hashes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, _ := e.seed(t, "ada@example.com")
	_, err := e.store.Users().Update(ctx, u.ID, func(u *domain.User) error {
		u.PasswordHash = "old$" + seededPassword
		return nil
	})
	wantErr(t, err, nil)
	login(t, e, "ada@example.com", seededPassword)
	got, _ := e.store.Users().ByID(ctx, u.ID)
	if got.PasswordHash != "fake$"+seededPassword {
		t.Fatalf("hash not upgraded: %q", got.PasswordHash)
	}
	login(t, e, "ada@example.com", seededPassword)
}

func TestRefresh_rotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	second, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	if second.RefreshToken == first.RefreshToken || second.Access.Token == "" {
		t.Fatalf("no rotation: %+v", second)
	}
	third, err := e.auth.Refresh(ctx, second.RefreshToken)
	wantErr(t, err, nil)
	if third.RefreshToken == second.RefreshToken {
		t.Fatal("no rotation on second refresh")
	}
}

// A refresh reads its account through the node's account cache: a change
// made on this node is in the next refresh's answer at once, and an
// account disabled or deleted since is refused, though the cache held it.
func TestRefresh_after_changes_on_this_node(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	for _, change := range []string{"renamed", "disabled", "deleted"} {
		u, _ := e.seed(t, change+"@example.com")
		pair := login(t, e, change+"@example.com", seededPassword)
		pair, err := e.auth.Refresh(ctx, pair.RefreshToken) // now cached
		wantErr(t, err, nil)
		switch change {
		case "renamed":
			_, err = e.users.Update(ctx, adminP, u.ID.String(), application.UpdateInput{Name: ptr("Renamed")})
		case "disabled":
			_, err = e.users.Update(ctx, adminP, u.ID.String(), application.UpdateInput{Disabled: ptr(true)})
		case "deleted":
			err = e.users.Delete(ctx, adminP, u.ID.String())
		}
		wantErr(t, err, nil)
		next, err := e.auth.Refresh(ctx, pair.RefreshToken)
		if change == "renamed" {
			wantErr(t, err, nil)
			if next.User.Name != "Renamed" {
				t.Errorf("refresh after the rename answers the name %q", next.User.Name)
			}
			continue
		}
		wantErr(t, err, domain.ErrRefreshTokenInvalid)
	}
}

func TestRefresh_repeat_within_grace_gets_same_successor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	a, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	e.clock.Advance(9 * time.Second)
	b, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	if a.RefreshToken != b.RefreshToken {
		t.Fatalf("two successors: %s and %s", a.RefreshToken, b.RefreshToken)
	}
	// The one successor still works.
	_, err = e.auth.Refresh(ctx, a.RefreshToken)
	wantErr(t, err, nil)
}

func TestRefresh_reuse_after_grace_revokes_family(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	other := login(t, e, "ada@example.com", seededPassword) // another session
	next, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	e.clock.Advance(11 * time.Second)
	_, err = e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenReused)
	_, err = e.auth.Refresh(ctx, next.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
	// Other sessions of the user live on.
	_, err = e.auth.Refresh(ctx, other.RefreshToken)
	wantErr(t, err, nil)
}

func TestRefresh_reuse_after_successor_used_revokes_family(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	second, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	third, err := e.auth.Refresh(ctx, second.RefreshToken)
	wantErr(t, err, nil)
	_, err = e.auth.Refresh(ctx, first.RefreshToken) // within grace, but its successor is used
	wantErr(t, err, domain.ErrRefreshTokenReused)
	_, err = e.auth.Refresh(ctx, third.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
}

func TestRefresh_grace_zero_means_any_repeat_is_reuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noGrace)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	_, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	_, err = e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenReused)
}

func TestRefresh_concurrent_repeats_yield_one_successor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	const n = 16
	results := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pair, err := e.auth.Refresh(ctx, first.RefreshToken)
			results[i], errs[i] = pair.RefreshToken, err
		}()
	}
	wg.Wait()
	for i := range n {
		wantErr(t, errs[i], nil)
		if results[i] != results[0] {
			t.Fatalf("two successors: %s and %s", results[0], results[i])
		}
	}
}

func TestRefresh_expiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	e.clock.Advance(30*24*time.Hour + time.Second)
	_, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
}

// A token that was rotated and has since expired is still a used token:
// presented again it is reuse, and its family dies with it, successor
// included (before, its expiry was checked first and hid the reuse). An
// unused token that expired is merely invalid, with no event.
func TestRefresh_reuse_after_own_expiry_revokes_family(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	e.seed(t, "ada@example.com")
	first := login(t, e.env, "ada@example.com", seededPassword)
	e.clock.Advance(24 * time.Hour)
	next, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	idle := login(t, e.env, "ada@example.com", seededPassword)

	// first expired at day 30; next lives to day 31.
	e.clock.Advance(29*24*time.Hour + time.Second)
	_, err = e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenReused)
	_, err = e.auth.Refresh(ctx, next.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)

	e.clock.Advance(24 * time.Hour)
	_, err = e.auth.Refresh(ctx, idle.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)

	if got, want := types(e.trail(t)), []domain.AuditEventType{
		domain.AuditLoginSucceeded, domain.AuditLoginSucceeded, domain.AuditRefreshReuseDetected, domain.AuditSessionRevoked,
	}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if n := e.metrics.Refreshes(ports.RefreshReused); n != 1 {
		t.Errorf("reuse counted %d times, want 1", n)
	}
}

func TestRefresh_family_ends_90_days_after_login(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	var err error
	for range 3 {
		e.clock.Advance(29 * 24 * time.Hour)
		pair, err = e.auth.Refresh(ctx, pair.RefreshToken)
		wantErr(t, err, nil)
	}
	// 87 days in: the new token lives only to day 90, not day 117.
	if want := e.clock.Now().Add(3 * 24 * time.Hour); !pair.RefreshExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", pair.RefreshExpiresAt, want)
	}
	e.clock.Advance(3*24*time.Hour + time.Second)
	_, err = e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
}

func TestRefresh_malformed_and_unknown_tokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"", "nope", "3F1C9A8E-5B2D-4C7E-9A10-2B3C4D5E6F70", "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"} {
		_, err := e.auth.Refresh(ctx, tok)
		wantErr(t, err, domain.ErrRefreshTokenInvalid)
	}
}

func TestLogout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	first := login(t, e, "ada@example.com", seededPassword)
	second, err := e.auth.Refresh(ctx, first.RefreshToken)
	wantErr(t, err, nil)
	// Logging out with an older token of the family ends the whole family.
	wantErr(t, e.auth.Logout(ctx, first.RefreshToken), nil)
	_, err = e.auth.Refresh(ctx, second.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
	wantErr(t, e.auth.Logout(ctx, "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"), nil)
	wantErr(t, e.auth.Logout(ctx, "garbage"), nil)
}

func TestRefresh_returns_current_profiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, _ := e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	_, err := e.store.Users().Update(ctx, u.ID, func(u *domain.User) error {
		u.Name = "Renamed"
		return nil
	})
	wantErr(t, err, nil)
	next, err := e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, nil)
	if next.User.Name != "Renamed" {
		t.Fatalf("refresh answered a stale user: %+v", next.User)
	}
}

func TestLogin_malformed_email_is_not_counted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	junk := "not an email " + string(make([]byte, 300))
	for range domain.LoginFreeFailures + 2 {
		_, err := e.auth.Login(ctx, application.LoginInput{Email: junk, Password: "whatever it is"})
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	rec, err := e.store.LoginAttempts().Get(ctx, domain.NormalizeEmail(junk))
	wantErr(t, err, nil)
	if rec.Failures != 0 {
		t.Fatalf("a malformed email was counted %d times", rec.Failures)
	}
}

func TestUpdate_wrong_current_password_counts_towards_the_lock_out(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	self, selfP := e.seed(t, "ada@example.com")
	change := application.UpdateInput{Password: ptr("another long secret"), CurrentPassword: ptr("a wrong guess")}
	for range domain.LoginFreeFailures {
		_, err := e.users.Update(ctx, selfP, self.ID.String(), change)
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	var tooMany *domain.TooManyAttemptsError
	change.CurrentPassword = ptr(seededPassword)
	if _, err := e.users.Update(ctx, selfP, self.ID.String(), change); !errors.As(err, &tooMany) {
		t.Fatalf("update after 5 wrong current passwords: %v, want too many attempts", err)
	}
	// Login for the same email is locked too: one counter per email.
	if _, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword}); !errors.As(err, &tooMany) {
		t.Fatalf("login: %v, want too many attempts", err)
	}
	e.clock.Advance(31 * time.Second)
	_, err := e.users.Update(ctx, selfP, self.ID.String(), change)
	wantErr(t, err, nil)
	rec, _ := e.store.LoginAttempts().Get(ctx, "ada@example.com")
	if rec.Failures != 0 {
		t.Fatalf("a right current password did not reset the count (%d)", rec.Failures)
	}
}

// Nodes starting together on an empty store must end up with one refresh
// key, or they would derive different successors for the same token: a
// token rotated on one node and repeated on another within the grace
// window gets the same successor.
func TestAuth_nodes_started_together_derive_one_successor(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	clk := newClock()
	const nodes = 8
	services := make([]*application.Services, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			deps := testDeps(t, store, clk, nil, nil, &logbuf.Buffer{})
			deps.Stores.Audit, deps.Metrics = nil, nil
			svc, err := application.New(deps, testConfig())
			if err != nil {
				t.Error(err)
			}
			services[i] = svc
		})
	}
	wg.Wait()
	keys, err := store.Keys(testBox).Keys(ctx, domain.KeyPurposeRefreshHMAC)
	wantErr(t, err, nil)
	if len(keys) != 1 {
		t.Fatalf("%d refresh keys stored, want 1", len(keys))
	}
	now := clk.Now()
	u := domain.User{ID: domain.NewUserID(now), Name: "Ada", Email: "ada@example.com",
		PasswordHash: "fake$" + seededPassword, Profiles: domain.Profiles{domain.ProfileCustomer}, CreatedAt: now, UpdatedAt: now}
	wantErr(t, store.Users().Create(ctx, u), nil)
	pair, err := tokensOf(services[0].Auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword}))
	wantErr(t, err, nil)
	a, err := services[1].Auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, nil)
	b, err := services[nodes-1].Auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, nil)
	if a.RefreshToken != b.RefreshToken {
		t.Fatal("two nodes derived different successors")
	}
}
