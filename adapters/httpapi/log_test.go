package httpapi_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestLogs_carryNoSecrets runs a whole account's life with the logger
// writing into a buffer, then looks for every secret that passed through.
func TestLogs_carryNoSecrets(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	const (
		firstPassword  = "first-Secret-Phrase-1"
		secondPassword = "second-Secret-Phrase-2"
		wrongPassword  = "wrong-Secret-Phrase-3"
	)
	secrets := []string{adminPassword, firstPassword, secondPassword, wrongPassword, "$argon2id$", admin}

	var u userBody
	wantJSON(t, s.do("POST", "/api/users", map[string]any{"name": "Ada", "email": "ada@example.com", "password": firstPassword}),
		http.StatusCreated, &u)
	tb := s.login("ada@example.com", firstPassword)
	secrets = append(secrets, tb.AccessToken, tb.RefreshToken)
	next := s.refreshOK(tb.RefreshToken)
	secrets = append(secrets, next.AccessToken, next.RefreshToken)

	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]any{"password": secondPassword, "currentPassword": firstPassword},
		withToken(next.AccessToken)), http.StatusOK, nil)
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": wrongPassword}),
		http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "nobody@example.com", "password": wrongPassword}),
		http.StatusUnauthorized, "invalid_credentials")
	third := s.login("ada@example.com", secondPassword)
	secrets = append(secrets, third.AccessToken, third.RefreshToken)
	s.refreshFails(tb.RefreshToken) // revoked by the password change
	wantProblem(t, s.do("GET", "/api/users/me", nil, withHeader("Authorization", "Bearer "+third.AccessToken+"x")),
		http.StatusUnauthorized, "unauthorized")
	if res := s.do("DELETE", "/api/users/"+u.ID, nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", res.Status)
	}
	if res := s.do("POST", "/auth/logout", map[string]string{"refreshToken": third.RefreshToken}); res.Status != http.StatusNoContent {
		t.Fatalf("logout: %d", res.Status)
	}

	logs := s.logs.String()
	for _, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains the secret %q", secret)
		}
	}
	// A token's signature alone is as good as a leak of the token.
	for _, tok := range []string{admin, tb.AccessToken, third.AccessToken} {
		if sig := tok[strings.LastIndexByte(tok, '.')+1:]; strings.Contains(logs, sig) {
			t.Errorf("the log contains a token signature")
		}
	}

	// One access line per request, each with the fields we promise.
	var access int
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line["msg"] != "http request" {
			continue
		}
		access++
		for _, k := range []string{"method", "route", "path", "status", "latency", "request_id"} {
			if _, ok := line[k]; !ok {
				t.Errorf("access line without %s: %s", k, sc.Text())
			}
		}
		if line["route"] == "/api/users/:id" && line["method"] == "DELETE" && line["user_id"] == nil {
			t.Errorf("access line of an authenticated request without user_id: %s", sc.Text())
		}
		// A sign-in names the account it signed in; a failed one none.
		if line["route"] == "/auth/login" {
			if ok := line["status"] == float64(http.StatusOK); ok != (line["user_id"] != nil) {
				t.Errorf("access line of a sign-in (status %v) with user_id %v: %s", line["status"], line["user_id"], sc.Text())
			}
		}
	}
	if access != 12 {
		t.Errorf("%d access lines, want 12 (one per request)", access)
	}
}

// The application's own lines carry the id of the request that caused them.
func TestLogs_application_lines_carry_the_request_id(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	res := s.do("POST", "/api/users", map[string]any{"name": "Ada", "email": "ada@example.com", "password": custPassword},
		withHeader("X-Request-Id", "trace-abc.123"))
	wantJSON(t, res, http.StatusCreated, nil)
	sc := bufio.NewScanner(strings.NewReader(s.logs.String()))
	var seen []string
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if line["request_id"] == "trace-abc.123" {
			seen = append(seen, line["msg"].(string))
		}
		if strings.Count(sc.Text(), `"request_id"`) > 1 {
			t.Errorf("request_id twice in one line: %s", sc.Text())
		}
	}
	if !slices.Contains(seen, "user created") || !slices.Contains(seen, "http request") {
		t.Fatalf("lines with the request id: %v; want the application's and the access line", seen)
	}
}
