package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/userd/userd/test/softauthn"
)

func TestPasskeys_rename(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	adaUser, ada, a, first := s.passkeyCustomer("Ada", "ada@example.com")
	second := s.addPasskey(ada.AccessToken, softauthn.New(testOrigin), "Phone")
	_, bob, _, bobs := s.passkeyCustomer("Bob", "bob@example.com")
	path := "/api/users/me/passkeys/"

	for _, tt := range []struct {
		name   string
		id     string
		body   any
		opts   []reqOption
		status int
		code   string
		// field is the errors entry of a validation_failed.
		field string
	}{
		{name: "anonymous", id: first.ID, body: map[string]string{"name": "Laptop"}, status: http.StatusUnauthorized, code: "unauthorized"},
		{name: "bad_id", id: "not-an-id", body: map[string]string{"name": "Laptop"}, status: http.StatusBadRequest, code: "invalid_id"},
		{name: "other_users_passkey", id: bobs.ID, body: map[string]string{"name": "Mine now"}, status: http.StatusNotFound, code: "not_found"},
		{name: "missing_passkey", id: missingID, body: map[string]string{"name": "Laptop"}, status: http.StatusNotFound, code: "not_found"},
		{name: "blank_name", id: first.ID, body: map[string]string{"name": "  "}, status: http.StatusBadRequest, code: "validation_failed", field: "name"},
		{name: "long_name", id: first.ID, body: map[string]string{"name": strings.Repeat("n", 65)}, status: http.StatusBadRequest, code: "validation_failed", field: "name"},
		{name: "name_not_a_string", id: first.ID, body: `{"name":7}`, status: http.StatusBadRequest, code: "malformed_json"},
		{name: "unknown_field", id: first.ID, body: `{"name":"Laptop","sign_count":0}`, status: http.StatusBadRequest, code: "unknown_field"},
		{name: "empty_body", id: first.ID, body: "", status: http.StatusBadRequest, code: "malformed_json"},
		{name: "no_body_nor_type", id: first.ID, status: http.StatusUnsupportedMediaType, code: "unsupported_media_type"},
		{name: "not_json", id: first.ID, body: "name=Laptop", opts: []reqOption{withHeader("Content-Type", "application/x-www-form-urlencoded")},
			status: http.StatusUnsupportedMediaType, code: "unsupported_media_type"},
		{name: "no_json_accepted", id: first.ID, body: map[string]string{"name": "Laptop"}, opts: []reqOption{withHeader("Accept", "text/html")},
			status: http.StatusNotAcceptable, code: "not_acceptable"},
		{name: "too_large", id: first.ID, body: `{"name":"` + strings.Repeat("n", 70<<10) + `"}`, status: http.StatusRequestEntityTooLarge, code: "payload_too_large"},
		{name: "bad_query", id: first.ID + "?a=%zz", body: map[string]string{"name": "Laptop"}, status: http.StatusBadRequest, code: "invalid_query"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			if tt.name != "anonymous" {
				opts = append(opts, withToken(ada.AccessToken))
			}
			p := wantProblem(t, s.do("PATCH", path+tt.id, tt.body, opts...), tt.status, tt.code)
			if tt.field != "" {
				if got := p.Fields(); len(got) != 1 || got[0] != tt.field {
					t.Errorf("fields %v, want [%s]", got, tt.field)
				}
			}
		})
	}
	// Nothing refused changed a name.
	names := func() map[string]string {
		out := map[string]string{}
		for _, p := range s.passkeys(ada.AccessToken) {
			out[p.ID] = p.Name
		}
		return out
	}
	if got := names(); len(got) != 2 || got[first.ID] != first.Name || got[second.ID] != "Phone" {
		t.Fatalf("ada's passkeys after refused renames: %+v", got)
	}
	if ps := s.passkeys(bob.AccessToken); len(ps) != 1 || ps[0].Name != bobs.Name {
		t.Fatalf("bob's passkeys after ada's try: %+v", ps)
	}

	// The answer is the passkey as the list shows it, trimmed.
	var renamed passkeyBody
	wantJSON(t, s.do("PATCH", path+first.ID, map[string]string{"name": "  Zoë's laptop "}, withToken(ada.AccessToken)),
		http.StatusOK, &renamed)
	listed := map[string]passkeyBody{}
	for _, p := range s.passkeys(ada.AccessToken) {
		listed[p.ID] = p
	}
	if renamed.Name != "Zoë's laptop" || renamed.ID != first.ID || renamed.CreatedAt != first.CreatedAt || listed[first.ID] != renamed {
		t.Errorf("renamed %+v, listed %+v; want %s named \"Zoë's laptop\"", renamed, listed[first.ID], first.ID)
	}
	if listed[second.ID].Name != "Phone" {
		t.Errorf("the other passkey changed: %+v", listed[second.ID])
	}
	// Empty is the default name, as at registration.
	wantJSON(t, s.do("PATCH", path+second.ID, map[string]string{"name": ""}, withToken(ada.AccessToken)), http.StatusOK, &renamed)
	if renamed.Name != "Passkey" {
		t.Errorf("renamed to %q, want Passkey", renamed.Name)
	}
	// A renamed passkey signs in as before.
	wantJSON(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusOK, nil)

	// Audited by id, never by the typed name.
	admin := s.adminToken()
	all, _ := s.auditPage(admin, "?limit=200")
	var events []auditEventBody
	for _, e := range all {
		if e.Type == "passkey.renamed" {
			events = append(events, e)
		}
	}
	if len(events) != 2 {
		t.Fatalf("%d passkey.renamed events, want 2: %+v", len(events), all)
	}
	for _, e := range events {
		if e.ActorID != adaUser.ID || e.SubjectID != adaUser.ID ||
			(e.Detail != "passkey="+first.ID && e.Detail != "passkey="+second.ID) || strings.Contains(e.Detail, "laptop") {
			t.Errorf("event %+v", e)
		}
	}
}
