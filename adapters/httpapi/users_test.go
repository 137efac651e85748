package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCreateUser_profiles(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	tests := []struct {
		name  string
		body  map[string]any
		token string
		want  []string
	}{
		{"neither_is_customer", map[string]any{}, "", []string{"ROLE_CUSTOMER"}},
		{"profiles_customer", map[string]any{"profiles": []string{"ROLE_CUSTOMER"}}, "", []string{"ROLE_CUSTOMER"}},
		{"null_profiles_is_absent", map[string]any{"profiles": nil}, "", []string{"ROLE_CUSTOMER"}},
		{"legacy_role_lower_case", map[string]any{"role": "customer"}, "", []string{"ROLE_CUSTOMER"}},
		{"legacy_role_prefixed", map[string]any{"role": "ROLE_CUSTOMER"}, "", []string{"ROLE_CUSTOMER"}},
		{"legacy_role_admin_by_admin", map[string]any{"role": "ADMIN"}, admin, []string{"ROLE_ADMIN"}},
		{"legacy_role_prefixed_admin", map[string]any{"role": "ROLE_ADMIN"}, admin, []string{"ROLE_ADMIN"}},
		{"legacy_role_mixed_case", map[string]any{"role": "Role_Admin"}, admin, []string{"ROLE_ADMIN"}},
		{"profiles_both_by_admin", map[string]any{"profiles": []string{"ROLE_CUSTOMER", "ROLE_ADMIN", "ROLE_ADMIN"}}, admin,
			[]string{"ROLE_ADMIN", "ROLE_CUSTOMER"}},
		{"customer_by_admin", map[string]any{}, admin, []string{"ROLE_CUSTOMER"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			email := fmt.Sprintf("User%d@Example.COM", i)
			tt.body["name"] = "  Ada Lovelace  "
			tt.body["email"] = email
			tt.body["password"] = custPassword
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			res := s.do("POST", "/api/users", tt.body, opts...)
			var u userBody
			wantJSON(t, res, http.StatusCreated, &u)
			if got := res.Header.Get("Location"); got != "/api/users/"+u.ID {
				t.Errorf("Location = %q, want /api/users/%s", got, u.ID)
			}
			if !slices.Equal(u.Profiles, tt.want) {
				t.Errorf("profiles = %v, want %v", u.Profiles, tt.want)
			}
			if u.Name != "Ada Lovelace" || u.Email != strings.ToLower(email) {
				t.Errorf("name, email = %q, %q: want trimmed name and lower-cased email", u.Name, u.Email)
			}
			if len(u.ID) != 24 {
				t.Errorf("id = %q", u.ID)
			}
			if u.CreatedAt != "2026-11-21T10:00:00Z" || u.UpdatedAt != u.CreatedAt {
				t.Errorf("createdAt, updatedAt = %q, %q", u.CreatedAt, u.UpdatedAt)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q", cc)
			}
			// The account works: it can sign in.
			if tb := s.login(email, custPassword); tb.User.ID != u.ID {
				t.Errorf("login user = %q, want %q", tb.User.ID, u.ID)
			}
		})
	}
}

func TestCreateUser_authorization(t *testing.T) {
	t.Parallel()
	body := func(email string, extra ...any) map[string]any {
		m := map[string]any{"name": "Eve", "email": email, "password": custPassword}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}

	t.Run("open_registration", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t)
		_, cust := s.customer("Carl", "carl@example.com")

		res := s.do("POST", "/api/users", body("eve1@example.com", "role", "ADMIN"))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
			t.Errorf("WWW-Authenticate = %q", got)
		}
		res = s.do("POST", "/api/users", body("eve2@example.com", "profiles", []string{"ROLE_ADMIN"}), withToken(cust.AccessToken))
		wantProblem(t, res, http.StatusForbidden, "forbidden")
		res = s.do("POST", "/api/users", body("eve3@example.com", "profiles", []string{"ROLE_ADMIN", "ROLE_CUSTOMER"}))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		// A customer may register another customer while registration is open.
		wantJSON(t, s.do("POST", "/api/users", body("eve4@example.com"), withToken(cust.AccessToken)), http.StatusCreated, nil)
	})

	t.Run("closed_registration", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t, withClosedRegistration())
		admin := s.adminToken()
		var cust userBody
		wantJSON(t, s.do("POST", "/api/users", body("carl@example.com"), withToken(admin)), http.StatusCreated, &cust)
		custToken := s.login("carl@example.com", custPassword).AccessToken

		res := s.do("POST", "/api/users", body("eve@example.com"))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if res.Header.Get("WWW-Authenticate") == "" {
			t.Error("no WWW-Authenticate")
		}
		wantProblem(t, s.do("POST", "/api/users", body("eve@example.com"), withToken(custToken)), http.StatusForbidden, "forbidden")
		wantJSON(t, s.do("POST", "/api/users", body("eve@example.com"), withToken(admin)), http.StatusCreated, nil)
	})

	t.Run("bad_token_is_never_anonymous", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t)
		for _, auth := range []string{"Bearer not-a-jwt", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer a.b.c"} {
			res := s.do("POST", "/api/users", body("eve@example.com"), withHeader("Authorization", auth))
			wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
			if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("%q: WWW-Authenticate = %q", auth, got)
			}
		}
		// Nothing was created: the email is still free.
		s.register("Eve", "eve@example.com")
	})
}

func TestCreateUser_badRequests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	valid := func() map[string]any {
		return map[string]any{"name": "Ada", "email": "ada@example.com", "password": custPassword}
	}
	with := func(k string, v any) map[string]any {
		m := valid()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name       string
		body       any
		code       string
		wantFields []string
	}{
		{"name_empty", with("name", "   "), "validation_failed", []string{"name"}},
		{"name_missing", with("name", nil), "validation_failed", []string{"name"}},
		{"name_too_long", with("name", strings.Repeat("n", 101)), "validation_failed", []string{"name"}},
		{"name_control_char", with("name", "Ada\x07"), "validation_failed", []string{"name"}},
		{"email_missing", with("email", nil), "validation_failed", []string{"email"}},
		{"email_display_name", with("email", "Ada <ada@example.com>"), "validation_failed", []string{"email"}},
		{"email_no_at", with("email", "ada.example.com"), "validation_failed", []string{"email"}},
		{"email_quoted_local", with("email", `"ada"@example.com`), "validation_failed", []string{"email"}},
		{"email_non_ascii", with("email", "adä@example.com"), "validation_failed", []string{"email"}},
		{"email_too_long", with("email", strings.Repeat("a", 64)+"@"+strings.Repeat("b", 63)+"."+strings.Repeat("c", 63)+"."+strings.Repeat("d", 63)+".com"), "validation_failed", []string{"email"}},
		{"password_missing", with("password", nil), "validation_failed", []string{"password"}},
		{"password_short", with("password", "short7!"), "validation_failed", []string{"password"}},
		{"password_too_long", with("password", strings.Repeat("ü", 129)), "validation_failed", []string{"password"}},
		{"password_common", with("password", "password123"), "validation_failed", []string{"password"}},
		{"password_is_email", with("password", "ADA@example.com"), "validation_failed", []string{"password"}},
		{"profiles_empty", with("profiles", []string{}), "validation_failed", []string{"profiles"}},
		{"every_field_at_once", map[string]any{"name": "", "email": "x", "password": "x"}, "validation_failed",
			[]string{"name", "email", "password"}},
		{"profiles_and_role", map[string]any{"name": "Ada", "email": "ada@example.com", "password": custPassword,
			"profiles": []string{"ROLE_CUSTOMER"}, "role": "CUSTOMER"}, "conflicting_fields", nil},
		{"unknown_profile", with("profiles", []string{"ROLE_ROOT"}), "invalid_profile", nil},
		{"unknown_role", with("role", "superuser"), "invalid_profile", nil},
		{"profile_wrong_case", with("profiles", []string{"role_admin"}), "invalid_profile", nil},
		{"unknown_field", with("isAdmin", true), "unknown_field", nil},
		{"field_wrong_case", map[string]any{"Name": "Ada", "email": "ada@example.com", "password": custPassword}, "unknown_field", nil},
		{"wrong_type", with("name", 42), "malformed_json", nil},
		{"profiles_not_array", with("profiles", "ROLE_ADMIN"), "malformed_json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, s.do("POST", "/api/users", tt.body), http.StatusBadRequest, tt.code)
			if tt.wantFields != nil && !slices.Equal(p.Fields(), tt.wantFields) {
				t.Errorf("errors fields = %v, want %v", p.Fields(), tt.wantFields)
			}
			for _, e := range p.Errors {
				if e.Message == "" {
					t.Errorf("empty message for %s", e.Field)
				}
			}
			if p.Instance != "/api/users" {
				t.Errorf("instance = %q", p.Instance)
			}
			if tt.code == "unknown_field" && !strings.Contains(p.Detail, `"`) {
				t.Errorf("detail %q does not name the field", p.Detail)
			}
		})
	}
	// Nothing above was created.
	s.register("Ada", "ada@example.com")
}

func TestCreateUser_emailTaken(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.register("Ada", "ada@example.com")
	res := s.do("POST", "/api/users", map[string]any{"name": "Ada 2", "email": "  Ada@Example.COM ", "password": custPassword})
	p := wantProblem(t, res, http.StatusConflict, "email_taken")
	if len(p.Errors) != 1 || p.Errors[0].Field != "email" || p.Errors[0].Message != "already registered" {
		t.Errorf("errors = %+v", p.Errors)
	}
}

func TestGetUser(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, adaTok := s.customer("Ada", "ada@example.com")
	bob, _ := s.customer("Bob", "bob@example.com")

	t.Run("admin_reads_anyone", func(t *testing.T) {
		var u userBody
		wantJSON(t, s.do("GET", "/api/users/"+bob.ID, nil, withToken(admin)), http.StatusOK, &u)
		if u.ID != bob.ID || u.Name != "Bob" || u.Email != "bob@example.com" || u.CreatedAt != bob.CreatedAt ||
			!slices.Equal(u.Profiles, []string{"ROLE_CUSTOMER"}) {
			t.Errorf("user = %+v", u)
		}
	})
	t.Run("customer_reads_itself", func(t *testing.T) {
		var u userBody
		res := s.do("GET", "/api/users/"+ada.ID, nil, withToken(adaTok.AccessToken))
		wantJSON(t, res, http.StatusOK, &u)
		if u.ID != ada.ID || u.Email != "ada@example.com" {
			t.Errorf("user = %+v", u)
		}
		if res.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("Cache-Control = %q", res.Header.Get("Cache-Control"))
		}
	})
	t.Run("me", func(t *testing.T) {
		var u userBody
		wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(adaTok.AccessToken)), http.StatusOK, &u)
		if u.ID != ada.ID {
			t.Errorf("me = %+v", u)
		}
		wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(admin)), http.StatusOK, &u)
		if u.Email != adminEmail || !slices.Equal(u.Profiles, []string{"ROLE_ADMIN"}) {
			t.Errorf("admin me = %+v", u)
		}
	})

	tests := []struct {
		name   string
		path   string
		token  string
		status int
		code   string
	}{
		{"customer_reads_other", "/api/users/" + bob.ID, adaTok.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_reads_missing", "/api/users/" + missingID, adaTok.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_bad_id", "/api/users/xyz", adaTok.AccessToken, http.StatusBadRequest, "invalid_id"},
		{"admin_reads_missing", "/api/users/" + missingID, admin, http.StatusNotFound, "not_found"},
		{"admin_bad_id", "/api/users/not-an-id", admin, http.StatusBadRequest, "invalid_id"},
		{"admin_upper_case_id", "/api/users/" + strings.ToUpper(bob.ID), admin, http.StatusBadRequest, "invalid_id"},
		{"anonymous", "/api/users/" + bob.ID, "", http.StatusUnauthorized, "unauthorized"},
		{"anonymous_bad_id", "/api/users/xyz", "", http.StatusUnauthorized, "unauthorized"},
		{"anonymous_me", "/api/users/me", "", http.StatusUnauthorized, "unauthorized"},
		{"bad_token_bad_id", "/api/users/xyz", "garbage", http.StatusUnauthorized, "unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			res := s.do("GET", tt.path, nil, opts...)
			p := wantProblem(t, res, tt.status, tt.code)
			if p.Instance != tt.path {
				t.Errorf("instance = %q, want %q", p.Instance, tt.path)
			}
			if tt.status == http.StatusUnauthorized && !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestListUsers(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	var ids []string
	for i := range 5 {
		s.clock.Advance(time.Second) // ids sort by creation second
		ids = append(ids, s.register(fmt.Sprintf("User %d", i), fmt.Sprintf("u%d@example.com", i)).ID)
	}
	adminID := s.login(adminEmail, adminPassword).User.ID
	all := append([]string{adminID}, ids...)

	t.Run("default_page", func(t *testing.T) {
		var users []userBody
		res := s.do("GET", "/api/users", nil, withToken(admin))
		wantJSON(t, res, http.StatusOK, &users)
		if got := idsOf(users); !slices.Equal(got, all) {
			t.Errorf("ids = %v, want %v", got, all)
		}
		if l := res.Header.Get("Link"); l != "" {
			t.Errorf("Link on the last page: %q", l)
		}
	})
	t.Run("pages_follow_link", func(t *testing.T) {
		var got []string
		path := "/api/users?limit=2"
		for pages := 0; path != ""; pages++ {
			if pages > 5 {
				t.Fatal("too many pages")
			}
			var users []userBody
			res := s.do("GET", path, nil, withToken(admin))
			wantJSON(t, res, http.StatusOK, &users)
			got = append(got, idsOf(users)...)
			path = nextPath(t, res.Header.Get("Link"))
			if path != "" && !strings.Contains(path, "limit=2") {
				t.Errorf("next link %q lost the limit", path)
			}
		}
		if !slices.Equal(got, all) {
			t.Errorf("ids = %v, want %v", got, all)
		}
	})
	t.Run("first_link", func(t *testing.T) {
		res := s.do("GET", "/api/users?limit=1", nil, withToken(admin))
		wantJSON(t, res, http.StatusOK, nil)
		want := `</api/users?limit=1&after=` + adminID + `>; rel="next"`
		if got := res.Header.Get("Link"); got != want {
			t.Errorf("Link = %q, want %q", got, want)
		}
	})
	t.Run("email_filter", func(t *testing.T) {
		var users []userBody
		wantJSON(t, s.do("GET", "/api/users?email=U3%40Example.com", nil, withToken(admin)), http.StatusOK, &users)
		if len(users) != 1 || users[0].ID != ids[3] {
			t.Errorf("users = %+v", users)
		}
	})
	t.Run("email_filter_is_exact", func(t *testing.T) {
		res := s.do("GET", "/api/users?email=u%25", nil, withToken(admin))
		wantJSON(t, res, http.StatusOK, nil)
		if strings.TrimSpace(string(res.Body)) != "[]" {
			t.Errorf("body = %s, want []", res.Body)
		}
	})
	t.Run("email_prefix_filter", func(t *testing.T) {
		var users []userBody
		wantJSON(t, s.do("GET", "/api/users?emailPrefix=+U", nil, withToken(admin)), http.StatusOK, &users)
		if got := idsOf(users); !slices.Equal(got, ids) {
			t.Errorf("ids = %v, want %v", got, ids)
		}
		wantJSON(t, s.do("GET", "/api/users?emailPrefix=u3%40", nil, withToken(admin)), http.StatusOK, &users)
		if len(users) != 1 || users[0].ID != ids[3] {
			t.Errorf("users = %+v", users)
		}
	})
	t.Run("email_prefix_wildcards_are_literal", func(t *testing.T) {
		for _, prefix := range []string{"u%25", "u_", "%25", "_", "%5C"} {
			res := s.do("GET", "/api/users?emailPrefix="+prefix, nil, withToken(admin))
			wantJSON(t, res, http.StatusOK, nil)
			if string(res.Body) != "[]" {
				t.Errorf("emailPrefix=%s: body = %s, want []", prefix, res.Body)
			}
		}
	})
	t.Run("email_prefix_pages_follow_link", func(t *testing.T) {
		var got []string
		path := "/api/users?limit=2&emailPrefix=U"
		for pages := 0; path != ""; pages++ {
			if pages > 5 {
				t.Fatal("too many pages")
			}
			var users []userBody
			res := s.do("GET", path, nil, withToken(admin))
			wantJSON(t, res, http.StatusOK, &users)
			got = append(got, idsOf(users)...)
			path = nextPath(t, res.Header.Get("Link"))
			if pages == 0 {
				if want := "/api/users?limit=2&after=" + ids[1] + "&emailPrefix=U"; path != want {
					t.Errorf("next link %q, want %q", path, want)
				}
			}
		}
		if !slices.Equal(got, ids) {
			t.Errorf("ids = %v, want %v", got, ids)
		}
	})
	t.Run("after_last_is_empty_array", func(t *testing.T) {
		res := s.do("GET", "/api/users?after="+ids[4], nil, withToken(admin))
		wantJSON(t, res, http.StatusOK, nil)
		if string(res.Body) != "[]" {
			t.Errorf("body = %s, want []", res.Body)
		}
	})

	_, cust := s.customer("Carl", "carl@example.com")
	tests := []struct {
		name   string
		query  string
		token  string
		status int
		code   string
	}{
		{"limit_zero", "?limit=0", admin, http.StatusBadRequest, "invalid_parameter"},
		{"limit_too_big", "?limit=201", admin, http.StatusBadRequest, "invalid_parameter"},
		{"limit_negative", "?limit=-1", admin, http.StatusBadRequest, "invalid_parameter"},
		{"limit_not_integer", "?limit=abc", admin, http.StatusBadRequest, "invalid_parameter"},
		{"limit_fraction", "?limit=1.5", admin, http.StatusBadRequest, "invalid_parameter"},
		{"limit_huge", "?limit=99999999999999999999", admin, http.StatusBadRequest, "invalid_parameter"},
		{"after_bad", "?after=zzz", admin, http.StatusBadRequest, "invalid_parameter"},
		{"customer", "", cust.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_bad_limit_is_shape_first", "?limit=0", cust.AccessToken, http.StatusBadRequest, "invalid_parameter"},
		{"anonymous", "", "", http.StatusUnauthorized, "unauthorized"},
		{"anonymous_bad_limit", "?limit=abc", "", http.StatusUnauthorized, "unauthorized"},
		{"email_prefix_too_long", "?emailPrefix=" + strings.Repeat("u", 255), admin, http.StatusBadRequest, "validation_failed"},
		{"email_prefix_not_ascii", "?emailPrefix=%C3%BC", admin, http.StatusBadRequest, "validation_failed"},
		{"email_prefix_nul", "?emailPrefix=u%00", admin, http.StatusBadRequest, "validation_failed"},
		{"email_prefix_and_email", "?email=u1%40example.com&emailPrefix=u", admin, http.StatusBadRequest, "validation_failed"},
		{"customer_bad_email_prefix_is_shape_first", "?emailPrefix=a+b", cust.AccessToken, http.StatusBadRequest, "validation_failed"},
		{"bad_limit_before_bad_email_prefix", "?limit=0&emailPrefix=a+b", admin, http.StatusBadRequest, "invalid_parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			p := wantProblem(t, s.do("GET", "/api/users"+tt.query, nil, opts...), tt.status, tt.code)
			if tt.code == "invalid_parameter" && len(p.Errors) != 1 {
				t.Errorf("errors = %+v", p.Errors)
			}
			if tt.code == "validation_failed" && !slices.Equal(p.Fields(), []string{"emailPrefix"}) {
				t.Errorf("errors = %+v, want one naming emailPrefix", p.Errors)
			}
		})
	}
	t.Run("limit_bounds_ok", func(t *testing.T) {
		wantJSON(t, s.do("GET", "/api/users?limit=1", nil, withToken(admin)), http.StatusOK, nil)
		wantJSON(t, s.do("GET", "/api/users?limit=200", nil, withToken(admin)), http.StatusOK, nil)
	})
}

func idsOf(users []userBody) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.ID
	}
	return out
}

// nextPath extracts the target of a rel="next" Link, "" when there is none.
func nextPath(t *testing.T, link string) string {
	t.Helper()
	if link == "" {
		return ""
	}
	target, rel, ok := strings.Cut(link, ">; ")
	if !ok || rel != `rel="next"` || !strings.HasPrefix(target, "<") {
		t.Fatalf("malformed Link %q", link)
	}
	return strings.TrimPrefix(target, "<")
}

func TestUpdateUser(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, adaTok := s.customer("Ada", "ada@example.com")
	bob, _ := s.customer("Bob", "bob@example.com")

	t.Run("legacy_shape_email_password", func(t *testing.T) {
		s.clock.Advance(time.Minute)
		var u userBody
		res := s.do("PUT", "/api/users/"+ada.ID, map[string]any{"email": "Ada.L@Example.com", "password": "new-Passphrase-99"},
			withToken(adaTok.AccessToken))
		wantJSON(t, res, http.StatusOK, &u)
		if u.Email != "ada.l@example.com" || u.Name != "Ada" || u.CreatedAt != ada.CreatedAt || u.UpdatedAt == u.CreatedAt {
			t.Errorf("user = %+v", u)
		}
		// The old session is gone, the new password works, the old one not.
		wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": adaTok.RefreshToken}),
			http.StatusUnauthorized, "invalid_refresh_token")
		adaTok = s.login("ada.l@example.com", "new-Passphrase-99")
		wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada.l@example.com", "password": custPassword}),
			http.StatusUnauthorized, "invalid_credentials")
	})
	t.Run("full_shape_by_admin", func(t *testing.T) {
		var u userBody
		body := map[string]any{"id": bob.ID, "name": "Robert", "email": "bob@example.com", "password": "bobs-New-Passphrase",
			"profiles": []string{"ROLE_CUSTOMER", "ROLE_ADMIN"}}
		wantJSON(t, s.do("PUT", "/api/users/"+bob.ID, body, withToken(admin)), http.StatusOK, &u)
		if u.Name != "Robert" || !slices.Equal(u.Profiles, []string{"ROLE_ADMIN", "ROLE_CUSTOMER"}) {
			t.Errorf("user = %+v", u)
		}
	})
	t.Run("name_only_keeps_sessions", func(t *testing.T) {
		var u userBody
		wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"name": "Ada King"}, withToken(adaTok.AccessToken)), http.StatusOK, &u)
		if u.Name != "Ada King" || u.Email != "ada.l@example.com" {
			t.Errorf("user = %+v", u)
		}
		var tb tokenBody
		wantJSON(t, s.do("POST", "/auth/refreshtoken", map[string]string{"refreshToken": adaTok.RefreshToken}), http.StatusOK, &tb)
		adaTok = tb
	})
	t.Run("customer_sends_own_profiles_unchanged", func(t *testing.T) {
		body := map[string]any{"id": ada.ID, "name": "Ada King", "profiles": []string{"ROLE_CUSTOMER"}}
		wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, body, withToken(adaTok.AccessToken)), http.StatusOK, nil)
	})
	t.Run("empty_body_object_changes_nothing", func(t *testing.T) {
		var u userBody
		wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, "{}", withToken(adaTok.AccessToken)), http.StatusOK, &u)
		if u.Name != "Ada King" {
			t.Errorf("user = %+v", u)
		}
	})
	t.Run("current_password_wrong", func(t *testing.T) {
		body := map[string]any{"password": "another-Passphrase-1", "currentPassword": "not-my-password"}
		wantProblem(t, s.do("PUT", "/api/users/"+ada.ID, body, withToken(adaTok.AccessToken)), http.StatusUnauthorized, "invalid_credentials")
	})

	tests := []struct {
		name   string
		id     string
		body   any
		token  string
		status int
		code   string
		fields []string
	}{
		{"id_mismatch", ada.ID, map[string]any{"id": bob.ID}, admin, http.StatusBadRequest, "id_mismatch", nil},
		{"bad_id_admin", "nope", map[string]any{"name": "x"}, admin, http.StatusBadRequest, "invalid_id", nil},
		{"bad_id_anonymous", "nope", map[string]any{"name": "x"}, "", http.StatusUnauthorized, "unauthorized", nil},
		{"anonymous", ada.ID, map[string]any{"name": "x"}, "", http.StatusUnauthorized, "unauthorized", nil},
		{"missing_admin", missingID, map[string]any{"name": "x"}, admin, http.StatusNotFound, "not_found", nil},
		{"missing_customer", missingID, map[string]any{"name": "x"}, adaTok.AccessToken, http.StatusForbidden, "forbidden", nil},
		{"customer_other", bob.ID, map[string]any{"name": "x"}, adaTok.AccessToken, http.StatusForbidden, "forbidden", nil},
		{"customer_own_profiles", ada.ID, map[string]any{"profiles": []string{"ROLE_ADMIN"}}, adaTok.AccessToken, http.StatusForbidden, "forbidden", nil},
		{"customer_own_profiles_added", ada.ID, map[string]any{"profiles": []string{"ROLE_CUSTOMER", "ROLE_ADMIN"}}, adaTok.AccessToken, http.StatusForbidden, "forbidden", nil},
		{"unknown_profile", ada.ID, map[string]any{"profiles": []string{"ROLE_GOD"}}, admin, http.StatusBadRequest, "invalid_profile", nil},
		{"role_is_create_only", ada.ID, map[string]any{"role": "ADMIN"}, admin, http.StatusBadRequest, "unknown_field", nil},
		{"validation", ada.ID, map[string]any{"name": "", "email": "no-at", "password": "short", "profiles": []string{}}, admin,
			http.StatusBadRequest, "validation_failed", []string{"name", "email", "password", "profiles"}},
		{"password_equals_email", ada.ID, map[string]any{"password": "Ada.L@example.com"}, adaTok.AccessToken,
			http.StatusBadRequest, "validation_failed", []string{"password"}},
		{"email_taken", ada.ID, map[string]any{"email": "BOB@example.com"}, admin, http.StatusConflict, "email_taken", []string{"email"}},
		{"malformed", ada.ID, `{"name": "x"`, admin, http.StatusBadRequest, "malformed_json", nil},
		{"not_object", ada.ID, `["name"]`, admin, http.StatusBadRequest, "malformed_json", nil},
		{"null_body", ada.ID, `null`, admin, http.StatusBadRequest, "malformed_json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			p := wantProblem(t, s.do("PUT", "/api/users/"+tt.id, tt.body, opts...), tt.status, tt.code)
			if tt.fields != nil && !slices.Equal(p.Fields(), tt.fields) {
				t.Errorf("fields = %v, want %v", p.Fields(), tt.fields)
			}
		})
	}
}

func TestUpdateUser_requireCurrentPassword(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRequireCurrentPassword())
	admin := s.adminToken()
	ada, tok := s.customer("Ada", "ada@example.com")

	p := wantProblem(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"password": "new-Passphrase-99"}, withToken(tok.AccessToken)),
		http.StatusBadRequest, "validation_failed")
	if !slices.Equal(p.Fields(), []string{"currentPassword"}) {
		t.Errorf("fields = %v", p.Fields())
	}
	body := map[string]any{"password": "new-Passphrase-99", "currentPassword": custPassword}
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, body, withToken(tok.AccessToken)), http.StatusOK, nil)
	// An admin needs no current password, and a name change none either.
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"email": "ada2@example.com"}, withToken(admin)), http.StatusOK, nil)
	// The new password ended Ada's sessions, and their access tokens.
	wantProblem(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"name": "A"}, withToken(tok.AccessToken)),
		http.StatusUnauthorized, "unauthorized")
	tok = s.login("ada2@example.com", "new-Passphrase-99")
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"name": "A"}, withToken(tok.AccessToken)), http.StatusOK, nil)
}

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, adaTok := s.customer("Ada", "ada@example.com")
	bob, bobTok := s.customer("Bob", "bob@example.com")

	for _, tt := range []struct {
		name   string
		id     string
		token  string
		status int
		code   string
	}{
		{"customer_other", ada.ID, bobTok.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_itself", bob.ID, bobTok.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_missing", missingID, bobTok.AccessToken, http.StatusForbidden, "forbidden"},
		{"admin_missing", missingID, admin, http.StatusNotFound, "not_found"},
		{"admin_bad_id", "123", admin, http.StatusBadRequest, "invalid_id"},
		{"anonymous_bad_id", "123", "", http.StatusUnauthorized, "unauthorized"},
		{"anonymous", ada.ID, "", http.StatusUnauthorized, "unauthorized"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			wantProblem(t, s.do("DELETE", "/api/users/"+tt.id, nil, opts...), tt.status, tt.code)
		})
	}

	res := s.do("DELETE", "/api/users/"+ada.ID, nil, withToken(admin))
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("delete: %d %s", res.Status, res.Body)
	}
	wantProblem(t, s.do("GET", "/api/users/"+ada.ID, nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("DELETE", "/api/users/"+ada.ID, nil, withToken(admin)), http.StatusNotFound, "not_found")
	// The refresh token died with the user; the access token no longer
	// names anyone.
	wantProblem(t, s.do("POST", "/auth/refreshtoken", map[string]string{"refreshToken": adaTok.RefreshToken}),
		http.StatusUnauthorized, "invalid_refresh_token")
	res = s.do("GET", "/api/users/me", nil, withToken(adaTok.AccessToken))
	wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
	if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
	}
	// The email is free again.
	s.register("Ada again", "ada@example.com")
}
