package httpapi_test

import (
	"net/http"
	"testing"
	"time"
)

func withPeer(addr string) reqOption { return func(r *http.Request) { r.RemoteAddr = addr } }

func TestAttack_auth_flood_from_one_ip_is_rate_limited(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(3))
	bad := map[string]string{"refreshToken": "not-a-token"}
	for range 3 {
		res := s.do("POST", "/auth/refresh-token", bad, withPeer("192.0.2.10:4000"))
		wantProblem(t, res, http.StatusUnauthorized, "invalid_refresh_token")
	}
	res := s.do("POST", "/auth/login", map[string]string{"email": "a@example.com", "password": "x"}, withPeer("192.0.2.10:4001"))
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	// 3 a minute: one token every 20 s.
	if got := res.Header.Get("Retry-After"); got != "20" {
		t.Fatalf("Retry-After = %q, want 20", got)
	}
	// Another client is not affected, and /api is not limited.
	wantProblem(t, s.do("POST", "/auth/logout", map[string]string{}, withPeer("192.0.2.11:4000")), http.StatusBadRequest, "validation_failed")
	res = s.do("GET", "/api/users/me", nil, withPeer("192.0.2.10:4000"))
	wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
}

func TestAuthIPLimit_refused_requests_take_no_tokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(3))
	peer := withPeer("192.0.2.20:1")
	for range 3 {
		s.do("POST", "/auth/logout", map[string]string{"refreshToken": "x"}, peer)
	}
	for range 10 {
		wantProblem(t, s.do("POST", "/auth/logout", map[string]string{"refreshToken": "x"}, peer), http.StatusTooManyRequests, "rate_limited")
	}
	s.clock.Advance(20 * time.Second)
	if res := s.do("POST", "/auth/logout", map[string]string{"refreshToken": "x"}, peer); res.Status != http.StatusNoContent {
		t.Fatalf("after 20 s: status %d, want 204", res.Status)
	}
}

func TestAttack_spoofed_x_forwarded_for_does_not_evade_the_ip_limit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(1, "10.0.0.0/8"))
	logout := map[string]string{"refreshToken": "x"}
	viaProxy := func(client string) []reqOption {
		return []reqOption{withPeer("10.0.0.5:443"), withHeader("X-Forwarded-For", client)}
	}
	// Two clients behind the trusted proxy have a bucket each.
	if res := s.do("POST", "/auth/logout", logout, viaProxy("203.0.113.1")...); res.Status != http.StatusNoContent {
		t.Fatalf("first client: %d", res.Status)
	}
	if res := s.do("POST", "/auth/logout", logout, viaProxy("203.0.113.2")...); res.Status != http.StatusNoContent {
		t.Fatalf("second client: %d", res.Status)
	}
	wantProblem(t, s.do("POST", "/auth/logout", logout, viaProxy("203.0.113.1")...), http.StatusTooManyRequests, "rate_limited")
	// An untrusted peer cannot pick its bucket by sending the header.
	untrusted := []reqOption{withPeer("198.51.100.7:1"), withHeader("X-Forwarded-For", "203.0.113.3")}
	if res := s.do("POST", "/auth/logout", logout, untrusted...); res.Status != http.StatusNoContent {
		t.Fatalf("untrusted first: %d", res.Status)
	}
	untrusted[1] = withHeader("X-Forwarded-For", "203.0.113.4")
	wantProblem(t, s.do("POST", "/auth/logout", logout, untrusted...), http.StatusTooManyRequests, "rate_limited")
}
