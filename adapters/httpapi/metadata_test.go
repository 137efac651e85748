package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// objectOfSize is a JSON object whose compact form is n bytes.
func objectOfSize(n int) string { return `{"k":"` + strings.Repeat("x", n-8) + `"}` }

// wantErrorFields checks a 400 validation_failed naming exactly fields.
func wantErrorFields(t *testing.T, res response, fields ...string) {
	t.Helper()
	p := wantProblem(t, res, http.StatusBadRequest, "validation_failed")
	var got []string
	for _, e := range p.Errors {
		got = append(got, e.Field)
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("errors name %v, want %v", got, fields)
	}
}

func TestUserMetadata_rules(t *testing.T) {
	t.Parallel()
	hooks := &kit.WebhookRecorder{}
	s := newTestServer(t, withAudit(), func(c *serverConfig) { c.webhooks = hooks })
	admin := s.adminToken()
	ada, tok := s.customer("Ada", "ada@example.com")
	self := "/api/users/" + ada.ID
	if string(ada.Metadata) != "{}" || string(ada.AppMetadata) != "{}" {
		t.Fatalf("a new user's metadata %s and appMetadata %s, want {} and {}", ada.Metadata, ada.AppMetadata)
	}

	// The customer changes its own metadata: stored canonical, sessions kept.
	var u userBody
	wantJSON(t, s.do("PUT", self, `{"metadata": {"theme": "dark", "lang": "fr"}}`, withToken(tok.AccessToken)), http.StatusOK, &u)
	if string(u.Metadata) != `{"lang":"fr","theme":"dark"}` || string(u.AppMetadata) != "{}" {
		t.Fatalf("after PUT metadata: %s / %s", u.Metadata, u.AppMetadata)
	}
	s.refreshOK(tok.RefreshToken)

	// appMetadata is the admin's: the customer may send it back unchanged
	// (compared as JSON), not change it.
	wantJSON(t, s.do("PUT", self, `{"appMetadata": {"plan": "pro", "seats": 3}}`, withToken(admin)), http.StatusOK, &u)
	if string(u.AppMetadata) != `{"plan":"pro","seats":3}` || string(u.Metadata) != `{"lang":"fr","theme":"dark"}` {
		t.Fatalf("after the admin's PUT appMetadata: %s / %s", u.Metadata, u.AppMetadata)
	}
	wantProblem(t, s.do("PUT", self, `{"appMetadata": {"plan": "enterprise"}}`, withToken(tok.AccessToken)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("PUT", self, `{"appMetadata": {}}`, withToken(tok.AccessToken)), http.StatusForbidden, "forbidden")
	wantJSON(t, s.do("PUT", self, `{"appMetadata": { "seats": 3, "plan": "pro" }, "metadata": {}}`, withToken(tok.AccessToken)),
		http.StatusOK, &u)
	if string(u.AppMetadata) != `{"plan":"pro","seats":3}` || string(u.Metadata) != "{}" {
		t.Fatalf("after sending the current appMetadata: %s / %s", u.Metadata, u.AppMetadata)
	}

	// Every representation carries them.
	var me userBody
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok.AccessToken)), http.StatusOK, &me)
	var listed []userBody
	wantJSON(t, s.do("GET", "/api/users?email=ada@example.com", nil, withToken(admin)), http.StatusOK, &listed)
	signedIn := s.login("ada@example.com", custPassword)
	for _, got := range []userBody{me, listed[0], signedIn.User} {
		if string(got.AppMetadata) != `{"plan":"pro","seats":3}` || string(got.Metadata) != "{}" {
			t.Fatalf("representation %+v: want the stored metadata", got)
		}
	}

	// The limits, on the compact form: 4 KiB and 16 KiB.
	put := func(body string) response { return s.do("PUT", self, body, withToken(admin)) }
	wantJSON(t, put(`{"metadata": `+objectOfSize(domain.MetadataMaxBytes)+`}`), http.StatusOK, &u)
	wantErrorFields(t, put(`{"metadata": `+objectOfSize(domain.MetadataMaxBytes+1)+`}`), "metadata")
	wantJSON(t, put(`{"appMetadata": `+objectOfSize(domain.AppMetadataMaxBytes)+`}`), http.StatusOK, &u)
	wantErrorFields(t, put(`{"appMetadata": `+objectOfSize(domain.AppMetadataMaxBytes+1)+`}`), "appMetadata")
	for _, bad := range []string{`null`, `[]`, `"{}"`, `1`, `true`} {
		wantErrorFields(t, put(`{"metadata": `+bad+`, "appMetadata": `+bad+`}`), "metadata", "appMetadata")
	}
	deep := strings.Repeat(`{"a":`, 16) + "{}" + strings.Repeat("}", 16)
	wantErrorFields(t, put(`{"metadata": `+deep+`}`), "metadata")

	// user.updated names the fields; no session ended for them.
	if _, err := s.svc.Delivery.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One event a change, each naming the one field (delivered in any order).
	var changed []string
	for _, e := range hooks.Sent() {
		switch e.Type {
		case domain.WebhookUserUpdated:
			changed = append(changed, strings.Join(changedFields(t, e.Data["changed"]), ","))
		case domain.WebhookSessionRevoked:
			t.Errorf("session.revoked %v: a change of metadata ends no session", e.Data)
		}
	}
	slices.Sort(changed)
	if want := []string{"appMetadata", "appMetadata", "metadata", "metadata", "metadata"}; !slices.Equal(changed, want) {
		t.Fatalf("user.updated changed %q, want %q", changed, want)
	}
}

func TestUserMetadata_create(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	body := func(email, extra string) string {
		return `{"name":"N","email":"` + email + `","password":"` + custPassword + `"` + extra + `}`
	}
	// Sign-up may set metadata, not appMetadata (but the default {}).
	var u userBody
	wantJSON(t, s.do("POST", "/api/users", body("a@example.com", `,"metadata":{"b":1,"a":2}`)), http.StatusCreated, &u)
	if string(u.Metadata) != `{"a":2,"b":1}` || string(u.AppMetadata) != "{}" {
		t.Fatalf("sign-up with metadata: %s / %s", u.Metadata, u.AppMetadata)
	}
	appBody := body("b@example.com", `,"appMetadata":{"plan":"pro"}`)
	wantProblem(t, s.do("POST", "/api/users", appBody), http.StatusUnauthorized, "unauthorized")
	_, cust := s.customer("Cust", "cust@example.com")
	wantProblem(t, s.do("POST", "/api/users", appBody, withToken(cust.AccessToken)), http.StatusForbidden, "forbidden")
	wantJSON(t, s.do("POST", "/api/users", body("c@example.com", `,"appMetadata":{}`)), http.StatusCreated, &u)
	wantErrorFields(t, s.do("POST", "/api/users", body("d@example.com", `,"metadata":[1]`)), "metadata")

	// An admin sets both.
	wantJSON(t, s.do("POST", "/api/users", body("e@example.com", `,"metadata":{"m":true},"appMetadata":{"plan":"pro"}`), withToken(admin)),
		http.StatusCreated, &u)
	if string(u.Metadata) != `{"m":true}` || string(u.AppMetadata) != `{"plan":"pro"}` {
		t.Fatalf("admin create: %s / %s", u.Metadata, u.AppMetadata)
	}
	var got userBody
	wantJSON(t, s.do("GET", "/api/users/"+u.ID, nil, withToken(admin)), http.StatusOK, &got)
	if !json.Valid(got.Metadata) || string(got.Metadata) != string(u.Metadata) || string(got.AppMetadata) != string(u.AppMetadata) {
		t.Fatalf("GET after create: %+v, want %+v", got, u)
	}
}

// changedFields reads user.updated's changed, as the outbox kept it.
func changedFields(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("changed %s: %v", b, err)
	}
	return fields
}
