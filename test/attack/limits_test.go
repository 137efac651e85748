package attack

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// A caller's X-Request-Id lands in every log line and audit row of its
// request: only 1–64 characters of [A-Za-z0-9._-] are kept, anything else
// is replaced by a new id.
func TestAttack_request_id_is_kept_only_when_short_and_plain(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range []struct {
		sent string
		kept bool
	}{
		{strings.Repeat("a", 64), true},
		{"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70", true},
		{"trace.id_01", true},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("b", 128), false},
		{"a/b", false},
		{"a b", false},
		{"<script>", false},
		{`"},{"admin":true`, false},
	} {
		r := kit.Send(t, http.MethodGet, n.Base+"/healthz", nil, "", "X-Request-Id", tc.sent)
		got := r.Header.Get("X-Request-Id")
		if tc.kept && got != tc.sent || !tc.kept && !generated.MatchString(got) {
			t.Errorf("X-Request-Id %q answered with %q; want it kept: %v", tc.sent, got, tc.kept)
		}
	}
}

// A query string that does not parse was read as if it were absent:
// ?limit=1;DROP listed the default 50 users. Now it is 400 invalid_query.
func TestAttack_query_that_does_not_parse_is_refused(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	admin := kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken
	for _, path := range []string{"/api/users?limit=1;DROP", "/api/users?email=%zz", "/api/audit?limit=1;DROP", "/api/users/me?a;b"} {
		if r := kit.Send(t, http.MethodGet, n.Base+path, nil, admin); r.Status != http.StatusBadRequest || r.Code() != "invalid_query" {
			t.Errorf("GET %s: %d %s, want 400 invalid_query", path, r.Status, r.Body)
		}
	}
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login?x;y", map[string]string{"email": adminEmail, "password": adminPassword}, ""); r.Code() != "invalid_query" {
		t.Errorf("POST /auth/login?x;y: %d %s, want 400 invalid_query", r.Status, r.Body)
	}
	if r := kit.Send(t, http.MethodGet, n.Base+"/api/users?limit=1", nil, admin); r.Status != http.StatusOK {
		t.Errorf("a query that parses: %d %s", r.Status, r.Body)
	}
}

// /metrics told anyone how logins fail and when token reuse is detected.
// It now answers only USERD_METRICS_ALLOW (default: loopback and the
// private ranges), the client being the one the rate limits see; others
// get the 404 of an unknown path.
func TestAttack_metrics_are_not_for_the_public(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
	n := userdproc.New(t, binary, env)
	n.Start()
	unknown := kit.Send(t, http.MethodGet, n.Base+"/no-such-path", nil, "", from("203.0.113.9")...)
	for client, allowed := range map[string]bool{
		"192.168.1.20": true, "10.1.2.3": true, "fd00::7": true,
		"203.0.113.9": false, "2001:db8::1": false,
	} {
		r := kit.Send(t, http.MethodGet, n.Base+"/metrics", nil, "", from(client)...)
		switch {
		case allowed && r.Status != http.StatusOK:
			t.Errorf("/metrics for %s: %d, want 200", client, r.Status)
		case !allowed && (r.Status != http.StatusNotFound || r.Code() != "not_found" ||
			strings.Replace(string(unknown.Body), "/no-such-path", "/metrics", 1) != string(r.Body)):
			t.Errorf("/metrics for %s: %d %s, want the 404 of an unknown path", client, r.Status, r.Body)
		}
	}
}

// USERD_METRICS_ADDR moves /metrics to a listener of its own, and the
// main listener then has none; USERD_ADMIN_ADDR, its former name, still
// does the same.
func TestAttack_metrics_on_their_own_address(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"USERD_METRICS_ADDR", "USERD_ADMIN_ADDR"} {
		env := baseEnv(t.TempDir())
		metricsAddr := userdproc.FreeAddr(t)
		env[setting] = metricsAddr
		n := userdproc.New(t, binary, env)
		n.Start()
		if r := kit.Send(t, http.MethodGet, n.Base+"/metrics", nil, ""); r.Status != http.StatusNotFound {
			t.Errorf("%s set: /metrics on the main listener: %d, want 404", setting, r.Status)
		}
		if _, ok := passwordChecks(t, "http://"+metricsAddr); !ok {
			t.Errorf("%s set: /metrics on %s lacks the password checks", setting, metricsAddr)
		}
		n.Stop()
	}
}

// IPv6 clients were limited per address, and a /64 holds 2^64 of them.
// Now one allowance covers the /64.
func TestAttack_ipv6_client_cannot_rotate_addresses_within_its_64(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
	env["USERD_AUTH_IP_LIMIT"] = "2"
	n := userdproc.New(t, binary, env)
	n.Start()
	guess := map[string]string{"email": "nobody@example.com", "password": "wrong-Guess-123"}
	var got []string
	for _, client := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::3", "2001:db8:1:2:abcd::4"} {
		r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", guess, "", from(client)...)
		got = append(got, r.Code())
	}
	if strings.Join(got, ",") != "invalid_credentials,invalid_credentials,rate_limited,rate_limited" {
		t.Errorf("four addresses of one /64 against an allowance of 2: %v", got)
	}
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", guess, "", from("2001:db8:1:3::1")...); r.Code() != "invalid_credentials" {
		t.Errorf("another /64: %d %s", r.Status, r.Body)
	}
}
