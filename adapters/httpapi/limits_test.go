package httpapi_test

import (
	"bytes"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/userd/userd/adapters/httpapi"
)

// withDefaultMetricsAllow serves /metrics to the default networks only.
func withDefaultMetricsAllow() serverOption {
	return func(c *serverConfig) {
		withMetrics()(c)
		c.observe.metricsAllow = httpapi.DefaultMetricsAllow()
	}
}

func registration(email string) map[string]string {
	return map[string]string{"name": "Flood", "email": email, "password": custPassword}
}

// Anonymous registrations from one address are limited per hour; the 409
// that tells an email exists counts like any other. Another address, and
// an admin, are not held to it.
func TestAttack_registration_flood_from_one_ip_is_rate_limited(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRegisterIPLimit(3))
	admin := s.adminToken()
	flooder := withPeer("192.0.2.50:1000")
	for i, email := range []string{"a@example.com", "b@example.com"} {
		if res := s.do("POST", "/api/users", registration(email), flooder); res.Status != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, res.Status, res.Body)
		}
	}
	wantProblem(t, s.do("POST", "/api/users", registration("a@example.com"), flooder), http.StatusConflict, "email_taken")
	res := s.do("POST", "/api/users", registration("c@example.com"), flooder)
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	// 3 an hour: one every 20 minutes.
	if got := res.Header.Get("Retry-After"); got != "1200" {
		t.Fatalf("Retry-After = %q, want 1200", got)
	}
	// Probing which emails exist is refused too.
	wantProblem(t, s.do("POST", "/api/users", registration("a@example.com"), flooder), http.StatusTooManyRequests, "rate_limited")
	// A signed-in customer from the same address is a self-service
	// registration as well.
	_, cust := s.customer("Cust", "cust@example.com")
	wantProblem(t, s.do("POST", "/api/users", registration("d@example.com"), flooder, withToken(cust.AccessToken)),
		http.StatusTooManyRequests, "rate_limited")
	// An admin creating users from that address is not limited by it.
	if res := s.do("POST", "/api/users", registration("e@example.com"), flooder, withToken(admin)); res.Status != http.StatusCreated {
		t.Fatalf("admin create from the flooding address: %d %s", res.Status, res.Body)
	}
	// Another address registers.
	if res := s.do("POST", "/api/users", registration("f@example.com"), withPeer("192.0.2.51:1000")); res.Status != http.StatusCreated {
		t.Fatalf("another address: %d %s", res.Status, res.Body)
	}
	s.clock.Advance(20 * time.Minute)
	if res := s.do("POST", "/api/users", registration("g@example.com"), flooder); res.Status != http.StatusCreated {
		t.Fatalf("20 minutes later: %d %s", res.Status, res.Body)
	}
}

// Every route that checks or hashes a password spends the /auth allowance
// of the client's address: creates, and updates with password or
// currentPassword. Other updates do not.
func TestAttack_password_routes_share_the_auth_ip_limit(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(3))
	u, cust := s.customer("Ada", "ada@example.com") // from httptest's 192.0.2.1
	thief := withPeer("198.51.100.9:1")
	guess := map[string]string{"password": "new-Passphrase-99", "currentPassword": "a wrong guess"}
	for range 3 {
		wantProblem(t, s.do("PUT", "/api/users/"+u.ID, guess, thief, withToken(cust.AccessToken)), http.StatusUnauthorized, "invalid_credentials")
	}
	res := s.do("PUT", "/api/users/"+u.ID, guess, thief, withToken(cust.AccessToken))
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if res.Header.Get("Retry-After") != "20" {
		t.Fatalf("Retry-After = %q", res.Header.Get("Retry-After"))
	}
	wantProblem(t, s.do("PUT", "/api/users/"+u.ID, map[string]string{"password": "new-Passphrase-99"}, thief, withToken(cust.AccessToken)),
		http.StatusTooManyRequests, "rate_limited")
	// One allowance: login and registration from that address are spent too.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}, thief),
		http.StatusTooManyRequests, "rate_limited")
	wantProblem(t, s.do("POST", "/api/users", registration("b@example.com"), thief), http.StatusTooManyRequests, "rate_limited")
	// An update that touches no password is not limited.
	if res := s.do("PUT", "/api/users/"+u.ID, map[string]string{"name": "Ada King"}, thief, withToken(cust.AccessToken)); res.Status != http.StatusOK {
		t.Fatalf("rename: %d %s", res.Status, res.Body)
	}
	// The per-email lock-out was not reached: three failures.
	s.clock.Advance(time.Minute)
	s.login("ada@example.com", custPassword)
}

// A request refused by one per-IP limit takes nothing from the other.
func TestIPLimits_a_refusal_takes_from_neither(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(4), withRegisterIPLimit(1))
	peer := withPeer("192.0.2.60:1")
	if res := s.do("POST", "/api/users", registration("a@example.com"), peer); res.Status != http.StatusCreated {
		t.Fatalf("first registration: %d", res.Status)
	}
	for range 5 {
		wantProblem(t, s.do("POST", "/api/users", registration("b@example.com"), peer), http.StatusTooManyRequests, "rate_limited")
	}
	// The refused registrations left the three /auth tokens in place.
	for range 3 {
		wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "a@example.com", "password": "a wrong guess"}, peer),
			http.StatusUnauthorized, "invalid_credentials")
	}
	wantProblem(t, s.do("POST", "/auth/logout", map[string]string{"refreshToken": "x"}, peer), http.StatusTooManyRequests, "rate_limited")
}

// IPv6 clients are keyed by their /64: a client that owns one cannot pick
// a fresh allowance per request. The prefix is configurable.
func TestAttack_ipv6_client_cannot_rotate_addresses_within_its_64(t *testing.T) {
	t.Parallel()
	login := map[string]string{"email": "a@example.com", "password": "a wrong guess"}
	s := newTestServer(t, withAuthIPLimit(1))
	wantProblem(t, s.do("POST", "/auth/login", login, withPeer("[2001:db8:1:2::1]:1")), http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/login", login, withPeer("[2001:db8:1:2:dead:beef:0:1]:1")), http.StatusTooManyRequests, "rate_limited")
	wantProblem(t, s.do("POST", "/auth/login", login, withPeer("[2001:db8:1:3::1]:1")), http.StatusUnauthorized, "invalid_credentials")

	perAddress := newTestServer(t, withAuthIPLimit(1), withIPv6Prefix(128))
	wantProblem(t, perAddress.do("POST", "/auth/login", login, withPeer("[2001:db8:1:2::1]:1")), http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, perAddress.do("POST", "/auth/login", login, withPeer("[2001:db8:1:2::2]:1")), http.StatusUnauthorized, "invalid_credentials")
}

// A query string Go's parser refuses is a 400 invalid_query on every API
// route, after authentication; it is never read as if it were absent.
func TestAttack_query_that_does_not_parse_is_invalid_query(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	u, cust := s.customer("Ada", "ada@example.com")
	for _, tc := range []struct {
		method, path string
		body         any
		token        string
	}{
		{"GET", "/api/users?limit=1;DROP", nil, admin},
		{"GET", "/api/users?email=%zz", nil, admin},
		{"GET", "/api/users/me?x;y", nil, cust.AccessToken},
		{"GET", "/api/users/" + u.ID + "?a=1;b=2", nil, cust.AccessToken},
		{"PUT", "/api/users/" + u.ID + "?;", map[string]string{"name": "X"}, cust.AccessToken},
		{"DELETE", "/api/users/" + u.ID + "?x=%", nil, admin},
		{"POST", "/api/users?x;y", registration("b@example.com"), ""},
		{"GET", "/api/audit?limit=1;DROP", nil, admin},
		{"POST", "/auth/login?a;b", map[string]string{"email": "ada@example.com", "password": custPassword}, ""},
		{"POST", "/auth/refresh-token?a;b", map[string]string{"refreshToken": cust.RefreshToken}, ""},
		{"POST", "/auth/logout?a;b", map[string]string{"refreshToken": cust.RefreshToken}, ""},
	} {
		var opts []reqOption
		if tc.token != "" {
			opts = append(opts, withToken(tc.token))
		}
		wantProblem(t, s.do(tc.method, tc.path, tc.body, opts...), http.StatusBadRequest, "invalid_query")
	}
	// Authentication first, as for every other 400.
	wantProblem(t, s.do("GET", "/api/users?limit=1;DROP", nil), http.StatusUnauthorized, "unauthorized")
	// Nothing was done by the refused requests: the user is still there.
	wantJSON(t, s.do("GET", "/api/users/"+u.ID, nil, withToken(admin)), http.StatusOK, nil)
	// A query that parses is fine, and the operational routes ignore theirs.
	wantJSON(t, s.do("GET", "/api/users?limit=1&after=", nil, withToken(admin)), http.StatusOK, nil)
	if res := s.do("GET", "/healthz?a;b", nil); res.Status != http.StatusOK {
		t.Fatalf("/healthz with a broken query: %d", res.Status)
	}
}

// /metrics answers only clients in the allow-list, the client being the
// one the per-IP limits see; others get the 404 of an unknown path.
func TestAttack_metrics_only_for_allowed_clients(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withDefaultMetricsAllow(), withAuthIPLimit(0, "10.0.0.0/8"))
	viaProxy := func(client string) []reqOption {
		return []reqOption{withPeer("10.0.0.5:443"), withHeader("X-Forwarded-For", client)}
	}
	unknown := s.do("GET", "/no-such-path", nil, withPeer("203.0.113.9:1"))
	for _, tc := range []struct {
		name    string
		opts    []reqOption
		allowed bool
	}{
		{"loopback", []reqOption{withPeer("127.0.0.1:1")}, true},
		{"ipv6_loopback", []reqOption{withPeer("[::1]:1")}, true},
		{"private", []reqOption{withPeer("192.168.1.20:1")}, true},
		{"ula", []reqOption{withPeer("[fd00::1]:1")}, true},
		{"public", []reqOption{withPeer("203.0.113.9:1")}, false},
		{"public_claiming_loopback", []reqOption{withPeer("203.0.113.9:1"), withHeader("X-Forwarded-For", "127.0.0.1")}, false},
		{"private_client_via_trusted_proxy", viaProxy("192.168.1.20"), true},
		{"public_client_via_trusted_proxy", viaProxy("203.0.113.9"), false},
	} {
		res := s.do("GET", "/metrics", nil, tc.opts...)
		if tc.allowed {
			if res.Status != http.StatusOK {
				t.Errorf("%s: %d, want 200", tc.name, res.Status)
			}
			continue
		}
		wantProblem(t, res, http.StatusNotFound, "not_found")
		if !bytes.Equal(res.Body, bytes.Replace(unknown.Body, []byte("/no-such-path"), []byte("/metrics"), 1)) {
			t.Errorf("%s: %s, want the body of an unknown path", tc.name, res.Body)
		}
	}
	// An allow-list of the operator's own.
	own := newTestServer(t, withMetricsAllow("203.0.113.0/24"))
	if res := own.do("GET", "/metrics", nil, withPeer("203.0.113.9:1")); res.Status != http.StatusOK {
		t.Errorf("listed network: %d", res.Status)
	}
	wantProblem(t, own.do("GET", "/metrics", nil, withPeer("127.0.0.1:1")), http.StatusNotFound, "not_found")
	if got := httpapi.DefaultMetricsAllow(); len(got) != 6 || !got[0].Contains(netip.MustParseAddr("127.0.0.1")) {
		t.Errorf("DefaultMetricsAllow = %v", got)
	}
}
