package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// TestPasswordReset_sent_by_an_admin: POST /api/users/{id}/password-reset
// mails the user the link a request would, and says what happened.
func TestPasswordReset_sent_by_an_admin(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	root := s.createAdmin()
	admin := s.login(adminEmail, adminPassword).AccessToken
	ada, adaTokens := s.customer("Ada", "ada@example.com")
	grace := s.register("Grace", "grace@example.com")
	wantJSON(t, s.do("PUT", "/api/users/"+grace.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK, nil)
	s.deliver()
	resets := func(email string) int { return len(s.mailsTo(email, domain.MailResetPassword)) }
	path := func(id string) string { return "/api/users/" + id + "/password-reset" }

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
		{name: "customer", id: ada.ID, token: adaTokens.AccessToken, status: http.StatusForbidden, code: "forbidden"},
		{name: "customer_to_itself", id: "me", token: adaTokens.AccessToken, status: http.StatusForbidden, code: "forbidden"},
		// The id's form is judged before the caller's right.
		{name: "customer_bad_id", id: "not-an-id", token: adaTokens.AccessToken, status: http.StatusBadRequest, code: "invalid_id"},
		{name: "bad_id", id: "ABCDEF0123456789ABCDEF01", token: admin, status: http.StatusBadRequest, code: "invalid_id"},
		{name: "unknown_user", id: missingID, token: admin, status: http.StatusNotFound, code: "not_found"},
		{name: "disabled_user", id: grace.ID, token: admin, status: http.StatusConflict, code: "account_disabled"},
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
	s.deliver()
	if n, m := resets(ada.Email), resets(grace.Email); n != 0 || m != 0 {
		t.Fatalf("refused sends mailed %d links to ada, %d to grace", n, m)
	}

	// No body, {}, or "me": 202 with no body, and a link that works.
	for i, send := range []func() response{
		func() response { return s.do("POST", path(ada.ID), nil, withToken(admin)) },
		func() response { return s.do("POST", path(ada.ID), "{}", withToken(admin)) },
	} {
		// A second apart: the outbox sends messages of one instant in
		// any order, and the last link must be the last sent.
		s.clock.Advance(time.Second)
		res := send()
		if res.Status != http.StatusAccepted || len(res.Body) != 0 {
			t.Fatalf("send %d: %d %q, want 202 and no body", i, res.Status, res.Body)
		}
	}
	if res := s.do("POST", path("me"), nil, withToken(admin)); res.Status != http.StatusAccepted {
		t.Fatalf("an admin's send to itself: %d %s", res.Status, res.Body)
	}
	token := s.linkToken(ada.Email, domain.MailResetPassword)
	if n := resets(ada.Email); n != 2 {
		t.Errorf("%d links to ada, want 2", n)
	}
	if n := resets(adminEmail); n != 1 {
		t.Errorf("%d links to the admin, want 1", n)
	}
	// The second link voided the first; the last one sets the password.
	wantNoContent(t, s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": token, "password": "a brand new passphrase"}))
	s.login("ada@example.com", "a brand new passphrase")

	// Audited with the admin as actor and ada as subject.
	events, _ := s.auditPage(admin, "?limit=200")
	var sent []auditEventBody
	for _, e := range events {
		if e.Type == "password_reset.requested" {
			sent = append(sent, e)
		}
	}
	if len(sent) != 3 {
		t.Fatalf("%d password_reset.requested events, want 3: %+v", len(sent), events)
	}
	for i, e := range sent {
		want := ada.ID
		if i == 2 {
			want = root.ID.String()
		}
		if e.ActorID != root.ID.String() || e.SubjectID != want || e.Detail != "by=admin" {
			t.Errorf("event %+v, want by=admin, actor %s, subject %s", e, root.ID, want)
		}
	}
}
