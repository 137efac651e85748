package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// TestMFA_code_guesses_lock_the_email_out (issue 24, finding 2): a stolen
// access token guessing TOTP codes on the routes that turn TOTP off or
// renew the recovery codes is locked out after the free failures, as in
// a login's second step, and the owner's own sign-in then waits too.
func TestMFA_code_guesses_lock_the_email_out(t *testing.T) {
	t.Parallel()
	for name, route := range map[string]struct{ method, path string }{
		"disable": {"DELETE", "/api/users/me/mfa/totp"},
		"renew":   {"POST", "/api/users/me/mfa/recovery-codes"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			_, tb, secret, _ := s.totpCustomer("Ada", "ada@example.com")
			for range domain.LoginFreeFailures {
				wantProblem(t, s.do(route.method, route.path, map[string]string{"code": "000000"}, withToken(tb.AccessToken)),
					http.StatusBadRequest, "invalid_mfa_code")
			}
			res := s.do(route.method, route.path, map[string]string{"code": totpCode(t, secret, s.now())}, withToken(tb.AccessToken))
			wantProblem(t, res, http.StatusTooManyRequests, "too_many_attempts")
			if res.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
			wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}),
				http.StatusTooManyRequests, "too_many_attempts")
			if !s.mfaSummary(tb.AccessToken).TOTP {
				t.Error("the factor is gone")
			}
		})
	}
}

// TestMFA_factor_routes_share_the_auth_ip_limit (issue 24, finding 2):
// every route that checks a password or a code of a second factor takes
// from the client IP's /auth allowance.
func TestMFA_factor_routes_share_the_auth_ip_limit(t *testing.T) {
	t.Parallel()
	routes := []struct {
		name, method, path string
		body               any
	}{
		{"totp_enrolment", "POST", "/api/users/me/mfa/totp", currentPassword("a guess")},
		{"totp_confirm", "POST", "/api/users/me/mfa/totp/confirm", map[string]string{"code": "000000"}},
		{"totp_disable", "DELETE", "/api/users/me/mfa/totp", map[string]string{"code": "000000"}},
		{"recovery_codes", "POST", "/api/users/me/mfa/recovery-codes", map[string]string{"code": "000000"}},
		{"passkey_registration", "POST", "/api/users/me/passkeys/registration", currentPassword("a guess")},
		{"passkey_removal", "DELETE", "/api/users/me/passkeys/000000000000000000000000", currentPassword("a guess")},
	}
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t, withAuthIPLimit(2))
			_, tb := s.customer("Ada", "ada@example.com")
			thief := withPeer("198.51.100.9:1")
			for i := range 2 {
				if res := s.do(r.method, r.path, r.body, thief, withToken(tb.AccessToken)); res.Status == http.StatusTooManyRequests {
					t.Fatalf("request %d within the allowance: %d %s", i+1, res.Status, res.Body)
				}
			}
			wantProblem(t, s.do(r.method, r.path, r.body, thief, withToken(tb.AccessToken)), http.StatusTooManyRequests, "rate_limited")
			// Reading the factors checks nothing and is not limited.
			s.mfaSummary(tb.AccessToken)
		})
	}
}

// TestPasskeys_registration_guesses_lock_the_email_out (issue 24, finding 1): the
// token alone adds no passkey, not even with USERD_REQUIRE_CURRENT_PASSWORD
// off, and the password's guesses count toward the email's lock-out.
func TestPasskeys_registration_guesses_lock_the_email_out(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	for range domain.LoginFreeFailures {
		wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", currentPassword("a guess"), withToken(tb.AccessToken)),
			http.StatusUnauthorized, "invalid_credentials")
	}
	wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", currentPassword(custPassword), withToken(tb.AccessToken)),
		http.StatusTooManyRequests, "too_many_attempts")
	// Once the lock has passed, the owner signs in and adds one.
	s.clock.Advance(time.Hour)
	s.addPasskey(s.login("ada@example.com", custPassword).AccessToken, softauthn.New(testOrigin), "")
}
