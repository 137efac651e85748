package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

type sessionBody struct {
	ID         string   `json:"id"`
	CreatedAt  string   `json:"createdAt"`
	LastUsedAt string   `json:"lastUsedAt"`
	ExpiresAt  string   `json:"expiresAt"`
	UserAgent  string   `json:"userAgent"`
	IP         string   `json:"ip"`
	AMR        []string `json:"amr"`
	Current    bool     `json:"current"`
	ClientID   *string  `json:"clientId"`
	Client     *string  `json:"client"`
}

// loginAs signs in with a User-Agent.
func (s *testServer) loginAs(email, password, userAgent string) tokenBody {
	s.t.Helper()
	var tb tokenBody
	wantJSON(s.t, s.do("POST", "/auth/login", map[string]string{"email": email, "password": password},
		withHeader("User-Agent", userAgent)), http.StatusOK, &tb)
	return tb
}

func (s *testServer) sessions(path, token string) []sessionBody {
	s.t.Helper()
	var out []sessionBody
	wantJSON(s.t, s.do("GET", path, nil, withToken(token)), http.StatusOK, &out)
	return out
}

func TestSessions_list(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada := s.register("Ada", "ada@example.com")
	long := strings.Repeat("x", 300)
	first := s.loginAs("ada@example.com", custPassword, "first-browser")
	s.clock.Advance(time.Minute)
	second := s.loginAs("ada@example.com", custPassword, long)
	s.clock.Advance(time.Minute)
	// A refresh moves lastUsedAt, not createdAt.
	var refreshed tokenBody
	wantJSON(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": first.RefreshToken}), http.StatusOK, &refreshed)

	list := s.sessions("/api/users/me/sessions", second.AccessToken)
	if len(list) != 2 {
		t.Fatalf("sessions = %+v, want 2", list)
	}
	newest, oldest := list[0], list[1]
	sid1, sid2 := claimsOf(t, first.AccessToken).Sid, claimsOf(t, second.AccessToken).Sid
	if newest.ID != sid2 || oldest.ID != sid1 {
		t.Errorf("order %s, %s; want newest first %s, %s", newest.ID, oldest.ID, sid2, sid1)
	}
	if !newest.Current || oldest.Current {
		t.Errorf("current = %v, %v; want true, false", newest.Current, oldest.Current)
	}
	if newest.UserAgent != long[:256] || oldest.UserAgent != "first-browser" {
		t.Errorf("userAgent %d chars, %q", len(newest.UserAgent), oldest.UserAgent)
	}
	if newest.IP == "" || oldest.IP != newest.IP {
		t.Errorf("ip %q, %q", newest.IP, oldest.IP)
	}
	if oldest.LastUsedAt == oldest.CreatedAt || newest.LastUsedAt != newest.CreatedAt {
		t.Errorf("lastUsedAt: refreshed %s (created %s), unused %s (created %s)", oldest.LastUsedAt,
			oldest.CreatedAt, newest.LastUsedAt, newest.CreatedAt)
	}
	if len(newest.AMR) != 1 || newest.AMR[0] != "pwd" || newest.ExpiresAt <= newest.CreatedAt {
		t.Errorf("amr %v expiresAt %s", newest.AMR, newest.ExpiresAt)
	}
	// The same list by id, for the user and an admin; an admin's token is
	// no session of Ada's, so none is current.
	if got := s.sessions("/api/users/"+ada.ID+"/sessions", second.AccessToken); len(got) != 2 || !got[0].Current {
		t.Errorf("by id: %+v", got)
	}
	byAdmin := s.sessions("/api/users/"+ada.ID+"/sessions", admin)
	if len(byAdmin) != 2 || byAdmin[0].Current || byAdmin[1].Current {
		t.Errorf("by admin: %+v", byAdmin)
	}
}

func TestSessions_revoke_one(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, keep := s.customer("Ada", "ada@example.com")
	gone := s.login("ada@example.com", custPassword)
	sid := claimsOf(t, gone.AccessToken).Sid

	wantNoContent(t, s.do("DELETE", "/api/users/me/sessions/"+sid, nil, withToken(keep.AccessToken)))
	// Its access token is refused at once, and its refresh token too.
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(gone.AccessToken)), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": gone.RefreshToken}),
		http.StatusUnauthorized, "invalid_refresh_token")
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(keep.AccessToken)), http.StatusOK, nil)
	if list := s.sessions("/api/users/me/sessions", keep.AccessToken); len(list) != 1 || !list[0].Current {
		t.Errorf("after revocation: %+v", list)
	}
	// Ended already: 404. An admin ends the last one.
	wantProblem(t, s.do("DELETE", "/api/users/me/sessions/"+sid, nil, withToken(keep.AccessToken)), http.StatusNotFound, "not_found")
	keepSid := claimsOf(t, keep.AccessToken).Sid
	wantNoContent(t, s.do("DELETE", "/api/users/"+ada.ID+"/sessions/"+keepSid, nil, withToken(admin)))
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(keep.AccessToken)), http.StatusUnauthorized, "unauthorized")
}

func TestSessions_revoke_all(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, one := s.customer("Ada", "ada@example.com")
	two := s.login("ada@example.com", custPassword)
	_, bob := s.customer("Bob", "bob@example.com")

	wantNoContent(t, s.do("DELETE", "/api/users/"+ada.ID+"/sessions", nil, withToken(admin)))
	for _, tok := range []string{one.AccessToken, two.AccessToken} {
		wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(tok)), http.StatusUnauthorized, "unauthorized")
	}
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(bob.AccessToken)), http.StatusOK, nil)
	// The caller's own, "me": its own token goes too.
	wantNoContent(t, s.do("DELETE", "/api/users/me/sessions", nil, withToken(bob.AccessToken)))
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(bob.AccessToken)), http.StatusUnauthorized, "unauthorized")
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(admin)), http.StatusOK, nil)
}

// Every way a session ends refuses its access tokens: here logout, reuse
// detection and a disabled account.
func TestSessions_ended_sessions_refuse_access_tokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withGrace(0))
	admin := s.adminToken()
	_, tok := s.customer("Ada", "ada@example.com")
	wantNoContent(t, s.do("POST", "/auth/logout", map[string]string{"refreshToken": tok.RefreshToken}))
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(tok.AccessToken)), http.StatusUnauthorized, "unauthorized")

	tok = s.login("ada@example.com", custPassword)
	var next tokenBody
	wantJSON(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tok.RefreshToken}), http.StatusOK, &next)
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tok.RefreshToken}),
		http.StatusUnauthorized, "invalid_refresh_token")
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(next.AccessToken)), http.StatusUnauthorized, "unauthorized")

	bob, bobTok := s.customer("Bob", "bob@example.com")
	wantJSON(t, s.do("PUT", "/api/users/"+bob.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK, nil)
	wantJSON(t, s.do("PUT", "/api/users/"+bob.ID, map[string]any{"disabled": false}, withToken(admin)), http.StatusOK, nil)
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(bobTok.AccessToken)), http.StatusUnauthorized, "unauthorized")
}

// The order of checks: 401, 400, 403, 404.
func TestSessions_errors(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, adaTok := s.customer("Ada", "ada@example.com")
	_, bobTok := s.customer("Bob", "bob@example.com")
	bobSid := claimsOf(t, bobTok.AccessToken).Sid
	goodSid := strings.Repeat("a", 32)
	tests := []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"list_anonymous", "GET", "/api/users/" + ada.ID + "/sessions", "", 401, "unauthorized"},
		{"list_anonymous_bad_id", "GET", "/api/users/nope/sessions", "", 401, "unauthorized"},
		{"list_bad_id", "GET", "/api/users/nope/sessions", adaTok.AccessToken, 400, "invalid_id"},
		{"list_other_user", "GET", "/api/users/" + missingID + "/sessions", adaTok.AccessToken, 403, "forbidden"},
		{"list_missing_user", "GET", "/api/users/" + missingID + "/sessions", admin, 404, "not_found"},
		{"delete_all_anonymous", "DELETE", "/api/users/me/sessions", "", 401, "unauthorized"},
		{"delete_all_bad_id", "DELETE", "/api/users/ADA/sessions", admin, 400, "invalid_id"},
		{"delete_all_other_user", "DELETE", "/api/users/" + missingID + "/sessions", adaTok.AccessToken, 403, "forbidden"},
		{"delete_all_missing_user", "DELETE", "/api/users/" + missingID + "/sessions", admin, 404, "not_found"},
		{"delete_anonymous", "DELETE", "/api/users/me/sessions/nope", "", 401, "unauthorized"},
		{"delete_bad_sid", "DELETE", "/api/users/me/sessions/nope", adaTok.AccessToken, 400, "invalid_id"},
		{"delete_upper_sid", "DELETE", "/api/users/me/sessions/" + strings.ToUpper(bobSid), adaTok.AccessToken, 400, "invalid_id"},
		{"delete_bad_id", "DELETE", "/api/users/x/sessions/" + goodSid, admin, 400, "invalid_id"},
		{"delete_bad_sid_of_other", "DELETE", "/api/users/" + missingID + "/sessions/nope", adaTok.AccessToken, 400, "invalid_id"},
		{"delete_other_user", "DELETE", "/api/users/" + missingID + "/sessions/" + goodSid, adaTok.AccessToken, 403, "forbidden"},
		{"delete_missing_user", "DELETE", "/api/users/" + missingID + "/sessions/" + goodSid, admin, 404, "not_found"},
		{"delete_unknown_sid", "DELETE", "/api/users/me/sessions/" + goodSid, adaTok.AccessToken, 404, "not_found"},
		// Bob's session is not Ada's, whoever asks.
		{"delete_others_sid", "DELETE", "/api/users/me/sessions/" + bobSid, adaTok.AccessToken, 404, "not_found"},
		{"delete_others_sid_admin", "DELETE", "/api/users/" + ada.ID + "/sessions/" + bobSid, admin, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			wantProblem(t, s.do(tt.method, tt.path, nil, opts...), tt.status, tt.code)
		})
	}
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(bobTok.AccessToken)), http.StatusOK, nil)
}
