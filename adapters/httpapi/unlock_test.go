package httpapi_test

import (
	"net/http"
	"testing"
)

// lockOut fails logins for email with a wrong password until the API
// answers 429 too_many_attempts.
func (s *testServer) lockOut(email string) {
	s.t.Helper()
	for range 10 {
		res := s.do("POST", "/auth/login", map[string]string{"email": email, "password": "a wrong guess"})
		if res.Status == http.StatusTooManyRequests {
			wantProblem(s.t, res, http.StatusTooManyRequests, "too_many_attempts")
			return
		}
		wantProblem(s.t, res, http.StatusUnauthorized, "invalid_credentials")
	}
	s.t.Fatalf("%s is not locked after 10 wrong passwords", email)
}

// wantLocked checks that the right password for email is refused unchecked.
func (s *testServer) wantLocked(email, password string) {
	s.t.Helper()
	res := s.do("POST", "/auth/login", map[string]string{"email": email, "password": password})
	wantProblem(s.t, res, http.StatusTooManyRequests, "too_many_attempts")
}

// TestUnlock_lifts_the_lock_out: POST /api/users/{id}/unlock forgets the
// failed logins of the user's email, so the right password signs in at
// once; only an admin may, and the trail says who did.
func TestUnlock_lifts_the_lock_out(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	root := s.createAdmin()
	admin := s.login(adminEmail, adminPassword).AccessToken
	ada, adaTokens := s.customer("Ada", "ada@example.com")
	grace := s.register("Grace", "grace@example.com")
	wantJSON(t, s.do("PUT", "/api/users/"+grace.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK, nil)
	s.lockOut(ada.Email)
	s.lockOut(grace.Email)
	path := func(id string) string { return "/api/users/" + id + "/unlock" }

	for _, tt := range []struct {
		name   string
		id     string
		token  string
		body   any
		opts   []reqOption
		status int
		code   string
	}{
		{name: "anonymous", id: ada.ID, status: http.StatusUnauthorized, code: "unauthorized"},
		// A locked-out user's own token still works, but not for this.
		{name: "customer", id: ada.ID, token: adaTokens.AccessToken, status: http.StatusForbidden, code: "forbidden"},
		{name: "customer_to_itself", id: "me", token: adaTokens.AccessToken, status: http.StatusForbidden, code: "forbidden"},
		// The id's form is judged before the caller's right.
		{name: "customer_bad_id", id: "not-an-id", token: adaTokens.AccessToken, status: http.StatusBadRequest, code: "invalid_id"},
		{name: "bad_id", id: "ABCDEF0123456789ABCDEF01", token: admin, status: http.StatusBadRequest, code: "invalid_id"},
		{name: "unknown_user", id: missingID, token: admin, status: http.StatusNotFound, code: "not_found"},
		{name: "a_body", id: ada.ID, token: admin, body: map[string]string{"email": ada.Email}, status: http.StatusBadRequest, code: "unknown_field"},
		{name: "malformed_body", id: ada.ID, token: admin, body: "{", status: http.StatusBadRequest, code: "malformed_json"},
		{name: "not_json", id: ada.ID, token: admin, body: "x", opts: []reqOption{withHeader("Content-Type", "text/plain")},
			status: http.StatusUnsupportedMediaType, code: "unsupported_media_type"},
		{name: "no_json_accepted", id: ada.ID, token: admin, opts: []reqOption{withHeader("Accept", "text/html")},
			status: http.StatusNotAcceptable, code: "not_acceptable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			wantProblem(t, s.do("POST", path(tt.id), tt.body, opts...), tt.status, tt.code)
		})
	}
	wantProblem(t, s.do("POST", path(ada.ID)+"?x=%zz", nil, withToken(admin)), http.StatusBadRequest, "invalid_query")
	wantProblem(t, s.do("GET", path(ada.ID), nil, withToken(admin)), http.StatusMethodNotAllowed, "method_not_allowed")
	// Nothing was lifted.
	s.wantLocked(ada.Email, custPassword)
	s.wantLocked(grace.Email, custPassword)

	// No body: 204 with no body, and the right password is admitted at
	// once; grace's lock-out holds.
	wantNoContent(t, s.do("POST", path(ada.ID), nil, withToken(admin)))
	s.login(ada.Email, custPassword)
	s.wantLocked(grace.Email, custPassword)
	// {}, on an email that is not locked: the same.
	wantNoContent(t, s.do("POST", path(ada.ID), "{}", withToken(admin)))
	// A disabled account is unlocked too: its right password is checked,
	// and answered as a disabled account's.
	wantNoContent(t, s.do("POST", path(grace.ID), nil, withToken(admin)))
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": grace.Email, "password": custPassword}),
		http.StatusForbidden, "account_disabled")
	// "me": the admin's own email.
	s.lockOut(adminEmail)
	wantNoContent(t, s.do("POST", path("me"), nil, withToken(admin)))
	s.login(adminEmail, adminPassword)

	// Audited with the admin as actor and the account as subject, one
	// event for each unlock done.
	events, _ := s.auditPage(admin, "?type=login.unlocked&limit=200")
	want := []string{ada.ID, ada.ID, grace.ID, root.ID.String()}
	if len(events) != len(want) {
		t.Fatalf("%d login.unlocked events, want %d: %+v", len(events), len(want), events)
	}
	for i, e := range events {
		if e.ActorID != root.ID.String() || e.SubjectID != want[i] || e.Detail != "" {
			t.Errorf("event %+v, want actor %s, subject %s, no detail", e, root.ID, want[i])
		}
	}
}
