package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// One test per attack of the security issue that is defended at the HTTP
// or use-case level, named after the attack; the token-format attacks (alg
// none, key confusion, unknown kid, jku/jwk/x5u) live in adapters/jwtissuer,
// the login timing comparison in application. Each fails when its defence
// is removed.

func TestAttack_token_of_deleted_user_is_rejected(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	victim, tok := s.customer("Ada", "ada@example.com")
	wantNoContent(t, s.do("DELETE", "/api/users/"+victim.ID, nil, withToken(admin)))
	// The access token has not expired, but its user is gone.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/users/me"},
		{"GET", "/api/users/" + victim.ID},
		{"PUT", "/api/users/" + victim.ID},
		{"POST", "/api/users"},
	} {
		var body any
		if r.method == "PUT" {
			body = map[string]string{"name": "Back again"}
		}
		if r.method == "POST" {
			body = map[string]string{"name": "Twin", "email": "twin@example.com", "password": custPassword}
		}
		res := s.do(r.method, r.path, body, withToken(tok.AccessToken))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s %s: no Bearer challenge", r.method, r.path)
		}
	}
}

func TestAttack_demoted_admin_loses_admin_at_once(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	root := s.adminToken()
	var second userBody
	wantJSON(t, s.do("POST", "/api/users", map[string]any{
		"name": "Second", "email": "second@example.com", "password": custPassword, "profiles": []string{"ROLE_ADMIN"},
	}, withToken(root)), http.StatusCreated, &second)
	secondTok := s.login("second@example.com", custPassword).AccessToken
	wantJSON(t, s.do("GET", "/api/users", nil, withToken(secondTok)), http.StatusOK, nil)

	wantJSON(t, s.do("PUT", "/api/users/"+second.ID, map[string]any{"profiles": []string{"ROLE_CUSTOMER"}}, withToken(root)), http.StatusOK, nil)
	// Within the access token's 15 minutes, it no longer carries admin power.
	wantProblem(t, s.do("GET", "/api/users", nil, withToken(secondTok)), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("DELETE", "/api/users/"+second.ID, nil, withToken(secondTok)), http.StatusUnauthorized, "unauthorized")
	// A fresh login gets a token with the current profiles.
	fresh := s.login("second@example.com", custPassword).AccessToken
	wantProblem(t, s.do("GET", "/api/users", nil, withToken(fresh)), http.StatusForbidden, "forbidden")
}

func TestAttack_profile_escalation_through_update_is_forbidden(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	u, tok := s.customer("Mallory", "mallory@example.com")
	for _, profiles := range [][]string{{"ROLE_ADMIN"}, {"ROLE_CUSTOMER", "ROLE_ADMIN"}} {
		res := s.do("PUT", "/api/users/"+u.ID, map[string]any{"profiles": profiles}, withToken(tok.AccessToken))
		wantProblem(t, res, http.StatusForbidden, "forbidden")
	}
	var me userBody
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok.AccessToken)), http.StatusOK, &me)
	if len(me.Profiles) != 1 || me.Profiles[0] != "ROLE_CUSTOMER" {
		t.Fatalf("profiles after the attempts: %v", me.Profiles)
	}
}

func TestAttack_admin_creation_through_registration_is_refused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tok := s.customer("Mallory", "mallory@example.com")
	for _, body := range []map[string]any{
		{"name": "M", "email": "m1@example.com", "password": custPassword, "profiles": []string{"ROLE_ADMIN"}},
		{"name": "M", "email": "m2@example.com", "password": custPassword, "role": "admin"},
		{"name": "M", "email": "m3@example.com", "password": custPassword, "role": "ROLE_ADMIN"},
	} {
		wantProblem(t, s.do("POST", "/api/users", body), http.StatusUnauthorized, "unauthorized")
		wantProblem(t, s.do("POST", "/api/users", body, withToken(tok.AccessToken)), http.StatusForbidden, "forbidden")
	}
}

// A second "profiles" key must not override the first: Go's decoder would
// keep the last one, whatever a proxy or WAF in front checked.
func TestAttack_duplicate_profiles_key_is_malformed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	body := `{"name":"M","email":"m@example.com","password":"` + custPassword + `","profiles":["ROLE_CUSTOMER"],"profiles":["ROLE_ADMIN"]}`
	wantProblem(t, s.do("POST", "/api/users", body), http.StatusBadRequest, "malformed_json")
	u, tok := s.customer("Ada", "ada@example.com")
	wantProblem(t, s.do("PUT", "/api/users/"+u.ID, `{"profiles":["ROLE_CUSTOMER"],"profiles":["ROLE_ADMIN"]}`,
		withToken(tok.AccessToken)), http.StatusBadRequest, "malformed_json")
	wantProblem(t, s.do("PUT", "/api/users/"+u.ID, `{"Profiles":["ROLE_ADMIN"]}`, withToken(admin)), http.StatusBadRequest, "unknown_field")
}

// Fields the server owns cannot be set through a request body.
func TestAttack_mass_assignment_of_server_fields_is_refused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	u, tok := s.customer("Ada", "ada@example.com")
	for _, field := range []string{"createdAt", "updatedAt", "passwordHash", "password_hash"} {
		create := `{"name":"M","email":"x-` + strings.ToLower(field) + `@example.com","password":"` + custPassword + `","` + field + `":"x"}`
		wantProblem(t, s.do("POST", "/api/users", create), http.StatusBadRequest, "unknown_field")
		wantProblem(t, s.do("PUT", "/api/users/"+u.ID, `{"`+field+`":"x"}`, withToken(tok.AccessToken)), http.StatusBadRequest, "unknown_field")
	}
	wantProblem(t, s.do("POST", "/api/users", `{"id":"000000000000000000000000","name":"M","email":"m@example.com","password":"`+custPassword+`"}`),
		http.StatusBadRequest, "unknown_field")
}

func TestAttack_oversized_strings_are_refused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name, field string
		body        map[string]string
	}{
		{"name_101", "name", map[string]string{"name": long(101), "email": "a@example.com", "password": custPassword}},
		{"email_255", "email", map[string]string{"name": "A", "email": long(243) + "@example.com", "password": custPassword}},
		{"password_129", "password", map[string]string{"name": "A", "email": "a@example.com", "password": long(129)}},
	} {
		p := wantProblem(t, s.do("POST", "/api/users", tc.body), http.StatusBadRequest, "validation_failed")
		if got := p.Fields(); len(got) != 1 || got[0] != tc.field {
			t.Errorf("%s: fields %v", tc.name, got)
		}
	}
	// Near the body limit, a login or refresh is refused without harm.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": long(60_000), "password": "x"}), http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": long(60_000)}), http.StatusUnauthorized, "invalid_refresh_token")
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": long(70_000), "password": "x"}), http.StatusRequestEntityTooLarge, "payload_too_large")
}

func TestAttack_common_password_is_refused(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	// The full-width form is the same password once normalised (NFKC).
	for _, pw := range []string{"password123", "Qwertyuiop", "iloveyou1", "baseball", "ｐａｓｓｗｏｒｄ１２３"} {
		p := wantProblem(t, s.do("POST", "/api/users", map[string]string{"name": "A", "email": "a@example.com", "password": pw}),
			http.StatusBadRequest, "validation_failed")
		if f := p.Fields(); len(f) != 1 || f[0] != "password" {
			t.Errorf("%q: fields %v", pw, f)
		}
	}
}

// Emails that differ only in case or surrounding space are one account: no
// second account, no separate lock-out counter to reset the first.
func TestAttack_email_case_variants_are_one_account(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	wantProblem(t, s.do("POST", "/api/users", map[string]string{"name": "A", "email": " ADA@Example.COM ", "password": custPassword}),
		http.StatusConflict, "email_taken")
	variants := []string{"ada@example.com", "ADA@example.com", "Ada@Example.Com ", " ada@EXAMPLE.com", "aDa@example.COM"}
	for _, e := range variants {
		wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": e, "password": "wrong-password-1"}), http.StatusUnauthorized, "invalid_credentials")
	}
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword}),
		http.StatusTooManyRequests, "too_many_attempts")
}

// A stolen refresh token stops working when the owner changes password or
// email, or is deleted.
func TestAttack_stolen_refresh_token_dies_with_credential_change(t *testing.T) {
	t.Parallel()
	for _, change := range []string{"password", "email", "delete"} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			admin := s.adminToken()
			u, tok := s.customer("Ada", "ada@example.com")
			stolen := tok.RefreshToken
			switch change {
			case "password":
				wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]string{"password": "a brand new passphrase"}, withToken(tok.AccessToken)), http.StatusOK, nil)
			case "email":
				wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]string{"email": "ada2@example.com"}, withToken(tok.AccessToken)), http.StatusOK, nil)
			case "delete":
				wantNoContent(t, s.do("DELETE", "/api/users/"+u.ID, nil, withToken(admin)))
			}
			s.refreshFails(stolen)
		})
	}
}

// Rotating forever does not keep a session alive past 90 days from login.
func TestAttack_session_cannot_be_extended_past_family_lifetime(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.createAdmin()
	tok := s.login(adminEmail, adminPassword).RefreshToken
	for range 4 {
		s.clock.Advance(20 * 24 * time.Hour)
		tok = s.refreshOK(tok).RefreshToken
	}
	s.clock.Advance(10*24*time.Hour + time.Second)
	s.refreshFails(tok)
}

func wantNoContent(t *testing.T, res response) {
	t.Helper()
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("status %d body %q, want 204 and no body", res.Status, res.Body)
	}
}
