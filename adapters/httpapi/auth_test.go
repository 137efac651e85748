package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// refreshPaths are both spellings of the refresh route.
var refreshPaths = []string{"/auth/refreshtoken", "/auth/refresh-token"}

func TestLogin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.createAdmin()

	// Email case and surrounding spaces do not matter.
	res := s.do("POST", "/auth/login", map[string]string{"email": "  ROOT@example.com", "password": adminPassword})
	var tb tokenBody
	wantJSON(t, res, http.StatusOK, &tb)
	if tb.TokenType != "Bearer" || tb.ExpiresIn != 900 || tb.RefreshExpiresIn != 30*24*3600 {
		t.Errorf("token response = %+v", tb)
	}
	if strings.Count(tb.AccessToken, ".") != 2 {
		t.Errorf("access token %q is not a JWS", tb.AccessToken)
	}
	if !uuidV4.MatchString(tb.RefreshToken) {
		t.Errorf("refresh token %q is not a v4 UUID", tb.RefreshToken)
	}
	if tb.User.ID != admin.ID.String() || tb.User.Email != adminEmail {
		t.Errorf("user = %+v", tb.User)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", cc)
	}
	if p := res.Header.Get("Pragma"); p != "no-cache" {
		t.Errorf("Pragma = %q", p)
	}
	// The access token signs the caller in, with either scheme case.
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		var me userBody
		wantJSON(t, s.do("GET", "/api/users/me", nil, withHeader("Authorization", scheme+" "+tb.AccessToken)), http.StatusOK, &me)
		if me.ID != admin.ID.String() {
			t.Errorf("me = %+v", me)
		}
	}
}

func TestAttack_login_answer_does_not_reveal_registered_emails(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()

	wrongPassword := s.do("POST", "/auth/login", map[string]string{"email": adminEmail, "password": "wrong-Passphrase-1"})
	unknownEmail := s.do("POST", "/auth/login", map[string]string{"email": "nobody@example.com", "password": "wrong-Passphrase-1"})
	wantProblem(t, wrongPassword, http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, unknownEmail, http.StatusUnauthorized, "invalid_credentials")
	if !bytes.Equal(wrongPassword.Body, unknownEmail.Body) {
		t.Errorf("bodies differ:\n%s\n%s", wrongPassword.Body, unknownEmail.Body)
	}
	for _, h := range []string{"Content-Type", "WWW-Authenticate", "Cache-Control", "Retry-After"} {
		if a, b := wrongPassword.Header.Get(h), unknownEmail.Header.Get(h); a != b {
			t.Errorf("%s differs: %q vs %q", h, a, b)
		}
	}
}

func TestLogin_badRequests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, tt := range []struct {
		name string
		body any
		code string
	}{
		{"empty_email", map[string]string{"email": "", "password": "x"}, "validation_failed"},
		{"missing_password", map[string]string{"email": "a@example.com"}, "validation_failed"},
		{"null_password", `{"email":"a@example.com","password":null}`, "validation_failed"},
		{"unknown_field", map[string]string{"email": "a@example.com", "password": "x", "otp": "1"}, "unknown_field"},
		{"wrong_type", `{"email":"a@example.com","password":12345678}`, "malformed_json"},
		{"empty_body", "", "malformed_json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/auth/login", tt.body), http.StatusBadRequest, tt.code)
		})
	}
}

func TestAttack_password_guessing_is_locked_out_per_email(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	bad := map[string]string{"email": adminEmail, "password": "wrong-Passphrase-1"}
	good := map[string]string{"email": adminEmail, "password": adminPassword}

	for i := range 5 {
		res := s.do("POST", "/auth/login", bad)
		wantProblem(t, res, http.StatusUnauthorized, "invalid_credentials")
		if res.Header.Get("Retry-After") != "" {
			t.Errorf("attempt %d: Retry-After before the lock", i+1)
		}
	}
	// Locked: even the right password is refused, without being checked.
	for _, body := range []map[string]string{good, bad, {"email": "ROOT@Example.com", "password": adminPassword}} {
		res := s.do("POST", "/auth/login", body)
		wantProblem(t, res, http.StatusTooManyRequests, "too_many_attempts")
		if got := res.Header.Get("Retry-After"); got != "30" {
			t.Errorf("Retry-After = %q, want 30", got)
		}
	}
	// Part of the wait is over: Retry-After counts down, rounded up.
	s.clock.Advance(10*time.Second + 500*time.Millisecond)
	res := s.do("POST", "/auth/login", good)
	wantProblem(t, res, http.StatusTooManyRequests, "too_many_attempts")
	if got := res.Header.Get("Retry-After"); got != "20" {
		t.Errorf("Retry-After = %q, want 20", got)
	}
	// Other emails are not affected.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "other@example.com", "password": "x-Passphrase-1"}),
		http.StatusUnauthorized, "invalid_credentials")
	// After the delay the right password works, and resets the count.
	s.clock.Advance(20 * time.Second)
	s.login(adminEmail, adminPassword)
	wantProblem(t, s.do("POST", "/auth/login", bad), http.StatusUnauthorized, "invalid_credentials")
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	for _, path := range refreshPaths {
		t.Run(strings.TrimPrefix(path, "/auth/"), func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			s.createAdmin()
			first := s.login(adminEmail, adminPassword)
			s.clock.Advance(time.Minute)

			var next tokenBody
			res := s.do("POST", path, map[string]string{"refreshToken": first.RefreshToken})
			wantJSON(t, res, http.StatusOK, &next)
			if res.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q", res.Header.Get("Cache-Control"))
			}
			if next.RefreshToken == first.RefreshToken || !uuidV4.MatchString(next.RefreshToken) {
				t.Errorf("refresh token not rotated: %q", next.RefreshToken)
			}
			if next.AccessToken == first.AccessToken || next.ExpiresIn != 900 || next.TokenType != "Bearer" {
				t.Errorf("token response = %+v", next)
			}
			if next.User.Email != adminEmail {
				t.Errorf("user = %+v", next.User)
			}
			wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(next.AccessToken)), http.StatusOK, nil)
		})
	}
}

func TestRefresh_badTokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"unknown", map[string]string{"refreshToken": "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"}, http.StatusUnauthorized, "invalid_refresh_token"},
		{"not_a_uuid", map[string]string{"refreshToken": "abc"}, http.StatusUnauthorized, "invalid_refresh_token"},
		{"empty", map[string]string{"refreshToken": ""}, http.StatusBadRequest, "validation_failed"},
		{"missing", map[string]string{}, http.StatusBadRequest, "validation_failed"},
		{"wrong_type", `{"refreshToken": 1}`, http.StatusBadRequest, "malformed_json"},
		{"legacy_unknown_field", map[string]string{"token": "x"}, http.StatusBadRequest, "unknown_field"},
	} {
		for _, path := range refreshPaths {
			t.Run(tt.name+path, func(t *testing.T) {
				wantProblem(t, s.do("POST", path, tt.body), tt.status, tt.code)
			})
		}
	}
}

// refreshOK refreshes and returns the new pair.
func (s *testServer) refreshOK(token string) tokenBody {
	s.t.Helper()
	var tb tokenBody
	wantJSON(s.t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": token}), http.StatusOK, &tb)
	return tb
}

func (s *testServer) refreshFails(token string) {
	s.t.Helper()
	wantProblem(s.t, s.do("POST", "/auth/refreshtoken", map[string]string{"refreshToken": token}),
		http.StatusUnauthorized, "invalid_refresh_token")
}

func TestAttack_refresh_token_replayed_after_grace_revokes_the_session(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	r0 := s.login(adminEmail, adminPassword).RefreshToken
	other := s.login(adminEmail, adminPassword).RefreshToken // another session
	r1 := s.refreshOK(r0).RefreshToken

	s.clock.Advance(11 * time.Second)
	unknown := s.do("POST", "/auth/refreshtoken", map[string]string{"refreshToken": "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"})
	reuse := s.do("POST", "/auth/refreshtoken", map[string]string{"refreshToken": r0})
	wantProblem(t, reuse, http.StatusUnauthorized, "invalid_refresh_token")
	// Reuse detection answers exactly like an unknown token.
	if !bytes.Equal(reuse.Body, unknown.Body) {
		t.Errorf("reuse and unknown differ:\n%s\n%s", reuse.Body, unknown.Body)
	}
	// The successor died with the family; the other session lives.
	s.refreshFails(r1)
	s.refreshOK(other)
}

func TestRefresh_graceRepeat(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	r0 := s.login(adminEmail, adminPassword).RefreshToken
	r1 := s.refreshOK(r0).RefreshToken

	// Two tabs, or a retry: within the window, the same successor.
	s.clock.Advance(5 * time.Second)
	if again := s.refreshOK(r0).RefreshToken; again != r1 {
		t.Fatalf("repeat within grace: %q, want the same successor %q", again, r1)
	}
	r2 := s.refreshOK(r1).RefreshToken
	// Once the successor is used, the original is a reuse even within the
	// window, and it ends the family.
	s.refreshFails(r0)
	s.refreshFails(r2)
}

func TestRefresh_noGrace(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withGrace(0))
	s.createAdmin()
	r0 := s.login(adminEmail, adminPassword).RefreshToken
	r1 := s.refreshOK(r0).RefreshToken
	s.refreshFails(r0)
	s.refreshFails(r1)
}

func TestRefresh_expired(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	r0 := s.login(adminEmail, adminPassword).RefreshToken
	s.clock.Advance(30*24*time.Hour + time.Second)
	s.refreshFails(r0)
}

func TestLogout(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	first := s.login(adminEmail, adminPassword)
	r1 := s.refreshOK(first.RefreshToken).RefreshToken
	other := s.login(adminEmail, adminPassword).RefreshToken

	// Logging out with an older token of the family ends the whole session.
	res := s.do("POST", "/auth/logout", map[string]string{"refreshToken": first.RefreshToken})
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("logout: %d %s", res.Status, res.Body)
	}
	s.refreshFails(r1)
	s.refreshOK(other)

	for _, tok := range []string{"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70", "not-a-token", r1} {
		res := s.do("POST", "/auth/logout", map[string]string{"refreshToken": tok})
		if res.Status != http.StatusNoContent {
			t.Errorf("logout %q: %d %s", tok, res.Status, res.Body)
		}
	}
	wantProblem(t, s.do("POST", "/auth/logout", map[string]string{}), http.StatusBadRequest, "validation_failed")
	wantProblem(t, s.do("POST", "/auth/logout", "{"), http.StatusBadRequest, "malformed_json")
}

func TestAuthentication_badTokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	tok := s.adminToken()
	other := newTestServer(t) // its own keys: its tokens do not verify here
	foreign := other.adminToken()

	// A token tampered with in its payload.
	parts := strings.Split(tok, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]

	for _, tt := range []struct {
		name      string
		auth      string
		challenge string
	}{
		{"none", "", "Bearer"},
		{"garbage", "Bearer garbage", `Bearer error="invalid_token"`},
		{"foreign_key", "Bearer " + foreign, `Bearer error="invalid_token"`},
		{"tampered", "Bearer " + tampered, `Bearer error="invalid_token"`},
		{"basic_scheme", "Basic cm9vdDpwdw==", "Bearer"},
		{"no_token", "Bearer", `Bearer error="invalid_request"`},
		{"raw_token_without_scheme", tok, "Bearer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.auth != "" {
				opts = append(opts, withHeader("Authorization", tt.auth))
			}
			res := s.do("GET", "/api/users/me", nil, opts...)
			wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
			if got := res.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
		})
	}

	t.Run("two_authorization_headers", func(t *testing.T) {
		// Which one would a proxy have checked? Refuse to guess.
		twice := func(r *http.Request) {
			r.Header.Add("Authorization", "Bearer "+tok)
			r.Header.Add("Authorization", "Bearer "+tok)
		}
		res := s.do("GET", "/api/users/me", nil, twice)
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer error="invalid_request"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
	})
	t.Run("expired", func(t *testing.T) {
		s.clock.Advance(15*time.Minute + 31*time.Second) // past exp and the leeway
		res := s.do("GET", "/api/users/me", nil, withToken(tok))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); got != `Bearer error="invalid_token"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
	})
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	for _, provider := range []bool{false, true} {
		t.Run(map[bool]string{false: "provider_off", true: "provider_on"}[provider], func(t *testing.T) {
			t.Parallel()
			var opts []serverOption
			if provider {
				opts = append(opts, withOIDCProvider())
			}
			s := newTestServer(t, opts...)
			// No Accept rule here: it is not an API route.
			res := s.do("GET", "/.well-known/jwks.json", nil, withHeader("Accept", "text/html"))
			var set struct {
				Keys []map[string]string `json:"keys"`
			}
			wantJSON(t, res, http.StatusOK, &set)
			if got := res.Header.Get("Cache-Control"); got != "public, max-age=300" {
				t.Errorf("Cache-Control = %q", got)
			}
			// The access-token key (Ed25519) first, then, with the
			// provider on, its RSA key, each with its kid.
			want := []string{"OKP"}
			if provider {
				want = append(want, "RSA")
			}
			var kty []string
			for _, k := range set.Keys {
				kty = append(kty, k["kty"])
				if k["kid"] == "" || k["use"] != "sig" || k["d"] != "" || k["p"] != "" {
					t.Errorf("key %v", k)
				}
			}
			if !slices.Equal(kty, want) {
				t.Fatalf("keys %v, want of types %v", set.Keys, want)
			}
			if provider {
				rsa := set.Keys[1]
				n, err := base64.RawURLEncoding.DecodeString(rsa["n"])
				if rsa["alg"] != "RS256" || rsa["e"] != "AQAB" || err != nil || len(n)*8 < 2048 || rsa["kid"] == set.Keys[0]["kid"] {
					t.Errorf("the RSA key %v: want alg RS256, e AQAB, n of 2048 bits or more, a kid of its own", rsa)
				}
			}
			if !bytes.Equal(res.Body, s.issuer.JWKSJSON()) {
				t.Errorf("body is not the issuer's JWKSJSON()")
			}
		})
	}
}
