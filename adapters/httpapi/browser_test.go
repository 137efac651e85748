package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/test/softauthn"
)

const (
	appOrigin   = "http://localhost:3000"
	otherOrigin = "http://127.0.0.1:4000"
)

// raw sends a request past the OpenAPI check: CORS headers are described
// once in the document's conventions, not on every response.
func (s *testServer) raw(method, path, body string, header map[string]string) response {
	s.t.Helper()
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// corsHeaders returns the Access-Control-* headers of h.
func corsHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out[k] = strings.Join(v, ", ")
		}
	}
	return out
}

func TestCORS_preflight_answers_the_methods_of_the_route(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, method, headers string
		origin                      string
		wantStatus                  int
		wantMethods                 string // "" for no CORS headers at all
	}{
		{name: "user_by_id", path: "/api/users/6740f1c2a1b2c3d4e5f60718", method: "PUT", headers: "authorization,content-type",
			origin: appOrigin, wantStatus: 204, wantMethods: "DELETE, GET, PUT"},
		{name: "users", path: "/api/users", method: "POST", headers: "content-type",
			origin: appOrigin, wantStatus: 204, wantMethods: "GET, POST"},
		{name: "me", path: "/api/users/me", method: "GET", headers: "accept-language,authorization,x-request-id",
			origin: appOrigin, wantStatus: 204, wantMethods: "GET"},
		{name: "mfa_of_me", path: "/api/users/me/mfa", method: "DELETE", headers: "authorization",
			origin: appOrigin, wantStatus: 204, wantMethods: "DELETE, GET"},
		{name: "login", path: "/auth/login", method: "POST", headers: "content-type",
			origin: appOrigin, wantStatus: 204, wantMethods: "POST"},
		{name: "refresh_without_headers", path: "/auth/refresh-token", method: "POST",
			origin: appOrigin, wantStatus: 204, wantMethods: "POST"},
		// Refused preflights: the browser sees no Access-Control-Allow-Origin.
		{name: "method_the_route_lacks", path: "/api/users/6740f1c2a1b2c3d4e5f60718", method: "PATCH",
			origin: appOrigin, wantStatus: 204},
		{name: "me_put", path: "/api/users/me", method: "PUT", origin: appOrigin, wantStatus: 204},
		{name: "header_not_allowed", path: "/api/users", method: "GET", headers: "x-evil",
			origin: appOrigin, wantStatus: 204},
		{name: "unknown_path", path: "/api/nothing", method: "GET", origin: appOrigin, wantStatus: 404},
		// Unlisted origins: today's answer to OPTIONS, no CORS header.
		{name: "unlisted_origin", path: "/api/users", method: "POST", headers: "content-type",
			origin: otherOrigin, wantStatus: 405},
		{name: "unlisted_origin_on_me", path: "/api/users/me", method: "GET", origin: otherOrigin, wantStatus: 405},
		{name: "unlisted_origin_by_port", path: "/auth/login", method: "POST", origin: "http://localhost:3001", wantStatus: 405},
		{name: "other_paths_untouched", path: "/healthz", method: "GET", origin: appOrigin, wantStatus: 405},
	}
	for _, cookie := range []bool{false, true} {
		opts := []serverOption{withCORS(appOrigin)}
		if cookie {
			opts = append(opts, withRefreshCookie())
		}
		s := newTestServer(t, opts...)
		for _, tt := range tests {
			name := tt.name
			if cookie {
				name += "_with_cookie"
			}
			t.Run(name, func(t *testing.T) {
				h := map[string]string{"Origin": tt.origin, "Access-Control-Request-Method": tt.method}
				if tt.headers != "" {
					h["Access-Control-Request-Headers"] = tt.headers
				}
				res := s.raw("OPTIONS", tt.path, "", h)
				if res.Status != tt.wantStatus {
					t.Fatalf("status %d, want %d; body %s", res.Status, tt.wantStatus, res.Body)
				}
				if res.Header.Get("X-Request-Id") == "" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
					t.Error("the headers of every response are missing")
				}
				got := corsHeaders(res.Header)
				if tt.wantMethods == "" {
					if res.Header.Get("Access-Control-Allow-Origin") != "" {
						t.Errorf("a refused preflight allows: %v", got)
					}
					if tt.origin != appOrigin && len(got) > 0 {
						t.Errorf("CORS headers for an unlisted origin: %v", got)
					}
					if tt.wantStatus >= 400 && mediaType(res.Header) != "application/problem+json" {
						t.Errorf("Content-Type = %q", res.Header.Get("Content-Type"))
					}
					return
				}
				want := map[string]string{
					"Access-Control-Allow-Origin":  appOrigin,
					"Access-Control-Allow-Methods": tt.wantMethods,
					"Access-Control-Allow-Headers": "Authorization, Content-Type, X-Request-Id, Accept-Language",
					"Access-Control-Max-Age":       "600",
				}
				if cookie {
					want["Access-Control-Allow-Credentials"] = "true"
				}
				if !equalMaps(got, want) {
					t.Errorf("CORS headers\ngot  %v\nwant %v", got, want)
				}
				if vary := strings.Join(res.Header.Values("Vary"), ", "); !strings.Contains(vary, "Origin") ||
					!strings.Contains(vary, "Access-Control-Request-Method") {
					t.Errorf("Vary = %q", vary)
				}
				if len(res.Body) != 0 {
					t.Errorf("a preflight with a body: %s", res.Body)
				}
			})
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCORS_actual_requests(t *testing.T) {
	t.Parallel()
	for _, cookie := range []bool{false, true} {
		opts := []serverOption{withCORS(appOrigin, "https://app.example.com")}
		if cookie {
			opts = append(opts, withRefreshCookie())
		}
		s := newTestServer(t, opts...)
		_, tb := s.customer("Ada", "ada@example.com")
		tests := []struct {
			name, method, path, body, origin string
			token                            bool
			wantStatus                       int
			wantCORS                         bool
		}{
			{name: "me", method: "GET", path: "/api/users/me", origin: appOrigin, token: true, wantStatus: 200, wantCORS: true},
			{name: "second_origin", method: "GET", path: "/api/users/me", origin: "https://app.example.com", token: true, wantStatus: 200, wantCORS: true},
			{name: "error_readable", method: "GET", path: "/api/users/me", origin: appOrigin, wantStatus: 401, wantCORS: true},
			{name: "login_error", method: "POST", path: "/auth/login", body: `{"email":"ada@example.com","password":"wrong-password-1"}`,
				origin: appOrigin, wantStatus: 401, wantCORS: true},
			{name: "unlisted", method: "GET", path: "/api/users/me", origin: otherOrigin, token: true, wantStatus: 200},
			{name: "unlisted_scheme", method: "GET", path: "/api/users/me", origin: "https://localhost:3000", token: true, wantStatus: 200},
			{name: "no_origin", method: "GET", path: "/api/users/me", token: true, wantStatus: 200},
			{name: "outside_the_api", method: "GET", path: "/healthz", origin: appOrigin, wantStatus: 200},
		}
		for _, tt := range tests {
			name := tt.name
			if cookie {
				name += "_with_cookie"
			}
			t.Run(name, func(t *testing.T) {
				h := map[string]string{}
				if tt.origin != "" {
					h["Origin"] = tt.origin
					h["Sec-Fetch-Site"] = "cross-site"
				}
				if tt.token {
					h["Authorization"] = "Bearer " + tb.AccessToken
				}
				res := s.raw(tt.method, tt.path, tt.body, h)
				if tt.wantStatus == 401 && tt.origin == otherOrigin && cookie {
					tt.wantStatus = 403
				}
				if res.Status != tt.wantStatus {
					t.Fatalf("status %d, want %d; body %s", res.Status, tt.wantStatus, res.Body)
				}
				got := corsHeaders(res.Header)
				if !tt.wantCORS {
					if len(got) > 0 {
						t.Errorf("CORS headers: %v", got)
					}
					return
				}
				want := map[string]string{
					"Access-Control-Allow-Origin":   tt.origin,
					"Access-Control-Expose-Headers": "X-Request-Id, Location, Link, Retry-After",
				}
				if cookie {
					want["Access-Control-Allow-Credentials"] = "true"
				}
				if !equalMaps(got, want) {
					t.Errorf("CORS headers\ngot  %v\nwant %v", got, want)
				}
				if vary := strings.Join(res.Header.Values("Vary"), ", "); !strings.Contains(vary, "Origin") {
					t.Errorf("Vary = %q", vary)
				}
			})
		}
	}
}

func TestCORS_any_origin_without_credentials(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withCORS("*"))
	res := s.raw("OPTIONS", "/api/users", "", map[string]string{"Origin": otherOrigin, "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "content-type"})
	if res.Status != 204 || res.Header.Get("Access-Control-Allow-Origin") != "*" ||
		res.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("%d %v", res.Status, corsHeaders(res.Header))
	}
}

// refreshCookieRE is the cookie of a token response, exactly.
var refreshCookieRE = regexp.MustCompile(`^__Host-userd_refresh=([0-9a-f-]{36}); Path=/; Max-Age=2592000; HttpOnly; Secure; SameSite=Strict$`)

// refreshCookieOf checks the Set-Cookie of a token response and its body
// without refreshToken, and returns the cookie's token.
func refreshCookieOf(t *testing.T, res response) string {
	t.Helper()
	if res.Status != http.StatusOK {
		t.Fatalf("status %d; body %s", res.Status, res.Body)
	}
	cookies := res.Header.Values("Set-Cookie")
	if len(cookies) != 1 {
		t.Fatalf("Set-Cookie %q, want one", cookies)
	}
	m := refreshCookieRE.FindStringSubmatch(cookies[0])
	if m == nil {
		t.Fatalf("Set-Cookie %q", cookies[0])
	}
	var body map[string]any
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatal(err)
	}
	if _, ok := body["refreshToken"]; ok {
		t.Errorf("the body carries refreshToken: %s", res.Body)
	}
	if body["accessToken"] == "" || body["refreshExpiresIn"] != float64(2592000) {
		t.Errorf("body %s", res.Body)
	}
	return m[1]
}

func withCookie(token string) reqOption {
	return func(r *http.Request) { r.Header.Add("Cookie", "__Host-userd_refresh="+token) }
}

func TestRefreshCookie_set_by_every_route_that_issues_tokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRefreshCookie())
	_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")
	s.register("Bob", "bob@example.com")
	_, _, a, _ := s.passkeyCustomer("Cy", "cy@example.com")

	tokens := map[string]string{}
	tokens["login"] = refreshCookieOf(t, s.do("POST", "/auth/login", map[string]string{"email": "bob@example.com", "password": custPassword}))
	ch := s.mfaRequired("ada@example.com", custPassword)
	tokens["login_mfa"] = refreshCookieOf(t, s.loginMFA(ch.MFAToken, totpCode(t, secret, s.now())))
	tokens["passkey"] = refreshCookieOf(t, s.passkeyLogin(a, softauthn.Faults{}))
	tokens["refresh"] = refreshCookieOf(t, s.do("POST", "/auth/refresh-token", nil, withCookie(tokens["login"])))
	seen := map[string]bool{}
	for route, tok := range tokens {
		if seen[tok] {
			t.Errorf("%s: a token seen before", route)
		}
		seen[tok] = true
	}
}

func TestRefreshCookie_refresh_and_logout_read_it(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRefreshCookie())
	s.register("Ada", "ada@example.com")
	tok := refreshCookieOf(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}))

	// No body at all, without Content-Type; then {}; then both spellings.
	tok = refreshCookieOf(t, s.do("POST", "/auth/refreshtoken", nil, withCookie(tok)))
	tok = refreshCookieOf(t, s.do("POST", "/auth/refresh-token", "{}", withCookie(tok)))
	// A token in the body wins over the cookie.
	next := refreshCookieOf(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tok}, withCookie("stale")))
	// A used-up cookie is the usual 401 (after the grace window).
	s.clock.Advance(11e9)
	wantProblem(t, s.do("POST", "/auth/refresh-token", nil, withCookie(tok)), http.StatusUnauthorized, "invalid_refresh_token")
	// Neither cookie nor body: the shape of the request is wrong.
	wantProblem(t, s.do("POST", "/auth/refresh-token", nil), http.StatusBadRequest, "validation_failed")

	s2 := newTestServer(t, withRefreshCookie())
	s2.register("Bob", "bob@example.com")
	tok2 := refreshCookieOf(t, s2.do("POST", "/auth/login", map[string]string{"email": "bob@example.com", "password": custPassword}))
	res := s2.do("POST", "/auth/logout", nil, withCookie(tok2))
	if res.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", res.Status, res.Body)
	}
	if got := res.Header.Get("Set-Cookie"); got != "__Host-userd_refresh=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict" {
		t.Errorf("logout Set-Cookie = %q", got)
	}
	wantProblem(t, s2.do("POST", "/auth/refresh-token", nil, withCookie(tok2)), http.StatusUnauthorized, "invalid_refresh_token")
	_ = next
}

func TestRefreshCookie_off_keeps_the_body(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	res := s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword})
	if res.Header.Get("Set-Cookie") != "" {
		t.Errorf("Set-Cookie without the cookie mode: %q", res.Header.Get("Set-Cookie"))
	}
	var tb tokenBody
	wantJSON(t, res, http.StatusOK, &tb)
	if tb.RefreshToken == "" {
		t.Error("no refreshToken in the body")
	}
	// The cookie is not read, and the body stays required.
	wantProblem(t, s.do("POST", "/auth/refresh-token", nil, withCookie(tb.RefreshToken), withHeader("Content-Type", "application/json")),
		http.StatusBadRequest, "malformed_json")
	wantProblem(t, s.do("POST", "/auth/logout", nil, withCookie(tb.RefreshToken)), http.StatusUnsupportedMediaType, "unsupported_media_type")
}

func TestRefreshCookie_cross_origin_requests_are_refused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRefreshCookie(), withCORS(appOrigin))
	s.register("Ada", "ada@example.com")
	tok := refreshCookieOf(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}))

	tests := []struct {
		name       string
		header     map[string]string
		wantStatus int
	}{
		{name: "same_site_other_origin", header: map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:3001"}, wantStatus: 403},
		{name: "cross_site", header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, wantStatus: 403},
		{name: "old_browser_origin_only", header: map[string]string{"Origin": "https://evil.example"}, wantStatus: 403},
		{name: "listed_origin", header: map[string]string{"Sec-Fetch-Site": "same-site", "Origin": appOrigin}, wantStatus: 200},
		{name: "same_origin", header: map[string]string{"Sec-Fetch-Site": "same-origin"}, wantStatus: 200},
		{name: "not_a_browser", wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []reqOption{withCookie(tok)}
			for k, v := range tt.header {
				opts = append(opts, withHeader(k, v))
			}
			var res response
			if tt.header["Origin"] == appOrigin {
				// A listed origin's answer carries CORS headers: past the
				// document check.
				h := map[string]string{"Cookie": "__Host-userd_refresh=" + tok}
				for k, v := range tt.header {
					h[k] = v
				}
				res = s.raw("POST", "/auth/refresh-token", "", h)
			} else {
				res = s.do("POST", "/auth/refresh-token", nil, opts...)
			}
			if tt.wantStatus == http.StatusForbidden {
				wantProblem(t, res, http.StatusForbidden, "cross_origin_request")
				return
			}
			tok = refreshCookieOf(t, res)
		})
	}
	// The refusal covers every unsafe request, cookie or not; safe ones pass.
	wantProblem(t, s.do("POST", "/auth/logout", nil, withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example")),
		http.StatusForbidden, "cross_origin_request")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword},
		withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example")),
		http.StatusForbidden, "cross_origin_request")
	if res := s.do("GET", "/healthz", nil, withHeader("Sec-Fetch-Site", "cross-site")); res.Status != http.StatusOK {
		t.Errorf("healthz: %d", res.Status)
	}
}

// A single-page app calls the provider's token endpoint, userinfo,
// revocation, metadata and keys from its own origin; authorization (a
// navigation) and introspection (a server's) answer no CORS.
func TestCORS_provider_endpoints_for_single_page_apps(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withCORS(appOrigin), withProviderEndpoints())
	for path, want := range map[string]string{
		"/oauth2/token": "POST", "/oauth2/userinfo": "GET, POST", "/oauth2/revoke": "POST",
		"/.well-known/openid-configuration": "GET", "/.well-known/jwks.json": "GET",
		"/oauth2/authorize": "", "/oauth2/introspect": "",
	} {
		method := "POST"
		if strings.HasPrefix(want, "GET") || strings.HasPrefix(path, "/.well-known/") {
			method = "GET"
		}
		res := s.raw("OPTIONS", path, "", map[string]string{"Origin": appOrigin, "Access-Control-Request-Method": method})
		if got := res.Header.Get("Access-Control-Allow-Methods"); got != want {
			t.Errorf("%s: preflight allows %q, want %q", path, got, want)
		}
	}
	res := s.raw("OPTIONS", "/oauth2/token", "", map[string]string{"Origin": otherOrigin, "Access-Control-Request-Method": "POST"})
	if res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("an unlisted origin is allowed on the token endpoint")
	}
}
