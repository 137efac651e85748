package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// clientBody is the client representation; decoding with
// DisallowUnknownFields proves that no secret or hash is in it.
type clientBody struct {
	ID                     string   `json:"id"`
	Name                   string   `json:"name"`
	Type                   string   `json:"type"`
	RedirectURIs           []string `json:"redirectUris"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectUris"`
	GrantTypes             []string `json:"grantTypes"`
	Scopes                 []string `json:"scopes"`
	FirstParty             bool     `json:"firstParty"`
	IDTokenSigningAlg      string   `json:"idTokenSigningAlg"`
	CreatedAt              string   `json:"createdAt"`
	UpdatedAt              string   `json:"updatedAt"`
}

// createdClientBody is the answer of a create: the client and, for a
// confidential one, its secret.
type createdClientBody struct {
	clientBody
	ClientSecret string `json:"clientSecret"`
}

const clientsPath = "/api/oauth-clients"

// grafana is the body of a confidential client's create.
var grafana = map[string]any{"name": "Grafana", "type": "confidential",
	"redirectUris": []string{"https://grafana.example.com/login/generic_oauth"}}

// createClient registers a client as the admin and returns the answer.
func (s *testServer) createClient(admin string, body map[string]any) createdClientBody {
	s.t.Helper()
	var c createdClientBody
	wantJSON(s.t, s.do("POST", clientsPath, body, withToken(admin)), http.StatusCreated, &c)
	return c
}

func TestOAuthClients_lifecycle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()

	res := s.do("POST", clientsPath, grafana, withToken(admin))
	var created createdClientBody
	wantJSON(t, res, http.StatusCreated, &created)
	if res.Header.Get("Location") != clientsPath+"/"+created.ID || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", res.Header)
	}
	if created.Name != "Grafana" || created.Type != "confidential" || created.FirstParty || created.IDTokenSigningAlg != "RS256" ||
		!slices.Equal(created.GrantTypes, []string{"authorization_code", "refresh_token"}) ||
		!slices.Equal(created.Scopes, []string{"openid", "profile", "email", "profiles", "offline_access"}) ||
		created.PostLogoutRedirectURIs == nil || len(created.PostLogoutRedirectURIs) != 0 || len(created.ClientSecret) != 43 {
		t.Fatalf("created %+v: not the contract's defaults and a secret", created)
	}
	// The provider authenticates the client with the secret shown once.
	if c, err := s.svc.OAuthClients.AuthenticateClient(context.Background(), created.ID, created.ClientSecret); err != nil || c.ID.String() != created.ID {
		t.Fatalf("AuthenticateClient = %+v, %v", c, err)
	}

	var got clientBody
	wantJSON(t, s.do("GET", clientsPath+"/"+created.ID, nil, withToken(admin)), http.StatusOK, &got)
	if got.ID != created.ID || !slices.Equal(got.RedirectURIs, created.RedirectURIs) {
		t.Errorf("GET = %+v", got)
	}

	// Fields absent are kept.
	var updated clientBody
	res = s.do("PUT", clientsPath+"/"+created.ID, map[string]any{"firstParty": true, "scopes": []string{"openid", "email"},
		"postLogoutRedirectUris": []string{"https://grafana.example.com/"}, "idTokenSigningAlg": nil}, withToken(admin))
	wantJSON(t, res, http.StatusOK, &updated)
	if !updated.FirstParty || !slices.Equal(updated.Scopes, []string{"openid", "email"}) || updated.Name != "Grafana" ||
		!slices.Equal(updated.RedirectURIs, created.RedirectURIs) || updated.IDTokenSigningAlg != "RS256" ||
		!slices.Equal(updated.PostLogoutRedirectURIs, []string{"https://grafana.example.com/"}) {
		t.Errorf("PUT = %+v", updated)
	}

	var rotated struct {
		ClientSecret string `json:"clientSecret"`
	}
	wantJSON(t, s.do("POST", clientsPath+"/"+created.ID+"/secret", nil, withToken(admin)), http.StatusOK, &rotated)
	if len(rotated.ClientSecret) != 43 || rotated.ClientSecret == created.ClientSecret {
		t.Fatalf("rotated secret %q", rotated.ClientSecret)
	}
	// The old secret stops at once; {} is a body too.
	_, err := s.svc.OAuthClients.AuthenticateClient(context.Background(), created.ID, created.ClientSecret)
	if !errors.Is(err, domain.ErrInvalidClientCredentials) {
		t.Errorf("the old secret: %v", err)
	}
	wantJSON(t, s.do("POST", clientsPath+"/"+created.ID+"/secret", "{}", withToken(admin)), http.StatusOK, &rotated)

	res = s.do("DELETE", clientsPath+"/"+created.ID, nil, withToken(admin))
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	wantProblem(t, s.do("GET", clientsPath+"/"+created.ID, nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("DELETE", clientsPath+"/"+created.ID, nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("PUT", clientsPath+"/"+created.ID, map[string]any{"name": "Gone"}, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("POST", clientsPath+"/"+created.ID+"/secret", nil, withToken(admin)), http.StatusNotFound, "not_found")
}

func TestOAuthClients_list_pages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	var none []clientBody
	wantJSON(t, s.do("GET", clientsPath, nil, withToken(admin)), http.StatusOK, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("no clients: %v, want []", none)
	}
	var ids []string
	for _, name := range []string{"One", "Two", "Three"} {
		ids = append(ids, s.createClient(admin, map[string]any{"name": name, "type": "public", "grantTypes": []string{"authorization_code"},
			"redirectUris": []string{"http://127.0.0.1/cb", "com.example.app:/cb"}}).ID)
	}
	slices.Sort(ids)
	var page []clientBody
	res := s.do("GET", clientsPath+"?limit=2", nil, withToken(admin))
	wantJSON(t, res, http.StatusOK, &page)
	next := `</api/oauth-clients?limit=2&after=` + ids[1] + `>; rel="next"`
	if len(page) != 2 || page[0].ID != ids[0] || page[1].ID != ids[1] || res.Header.Get("Link") != next {
		t.Fatalf("first page %v, Link %q", page, res.Header.Get("Link"))
	}
	res = s.do("GET", clientsPath+"?limit=2&after="+ids[1], nil, withToken(admin))
	wantJSON(t, res, http.StatusOK, &page)
	if len(page) != 1 || page[0].ID != ids[2] || res.Header.Get("Link") != "" {
		t.Fatalf("last page %v, Link %q", page, res.Header.Get("Link"))
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?after=nope", "?after=" + strings.ToUpper(ids[0])} {
		wantProblem(t, s.do("GET", clientsPath+q, nil, withToken(admin)), http.StatusBadRequest, "invalid_parameter")
	}
}

// Every route answers in the contract's order: 401, 400, 403, 404.
func TestOAuthClients_order_of_checks(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	_, cust := s.customer("Ada", "ada@example.com")
	customer := cust.AccessToken
	missing := clientsPath + "/" + missingID
	bad := map[string]any{"redirectUris": []string{"http://grafana.example.com/cb"}}
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{"GET", clientsPath + "/%s", nil},
		{"PUT", clientsPath + "/%s", map[string]any{"name": "New"}},
		{"DELETE", clientsPath + "/%s", nil},
		{"POST", clientsPath + "/%s/secret", nil},
	} {
		at := func(id string) string { return strings.Replace(r.path, "%s", id, 1) }
		wantProblem(t, s.do(r.method, at("nope"), r.body), http.StatusUnauthorized, "unauthorized")
		wantProblem(t, s.do(r.method, at("nope"), r.body, withToken(customer)), http.StatusBadRequest, "invalid_id")
		wantProblem(t, s.do(r.method, at(missingID), r.body, withToken(customer)), http.StatusForbidden, "forbidden")
		wantProblem(t, s.do(r.method, at(missingID), r.body, withToken(admin)), http.StatusNotFound, "not_found")
	}
	// The body's form is judged before the caller's right.
	p := wantProblem(t, s.do("PUT", missing, bad, withToken(customer)), http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "redirectUris" {
		t.Errorf("errors %+v", p.Errors)
	}
	wantProblem(t, s.do("POST", clientsPath, bad), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("POST", clientsPath, bad, withToken(customer)), http.StatusBadRequest, "validation_failed")
	wantProblem(t, s.do("POST", clientsPath, grafana, withToken(customer)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("GET", clientsPath, nil), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("GET", clientsPath+"?limit=x", nil, withToken(customer)), http.StatusBadRequest, "invalid_parameter")
	wantProblem(t, s.do("GET", clientsPath, nil, withToken(customer)), http.StatusForbidden, "forbidden")
	// A client's id is not a user's, nor "me".
	wantProblem(t, s.do("GET", clientsPath+"/me", nil, withToken(admin)), http.StatusBadRequest, "invalid_id")
}

func TestOAuthClients_refusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	field := func(body any, want string, msg string) {
		t.Helper()
		p := wantProblem(t, s.do("POST", clientsPath, body, withToken(admin)), http.StatusBadRequest, "validation_failed")
		if len(p.Errors) == 0 || p.Errors[0].Field != want || !strings.Contains(p.Errors[0].Message, msg) {
			t.Errorf("errors %+v, want %s: %q", p.Errors, want, msg)
		}
	}
	with := func(k string, v any) map[string]any {
		b := map[string]any{"name": "App", "type": "confidential", "redirectUris": []string{"https://app.example.com/cb"}}
		b[k] = v
		return b
	}
	field(with("redirectUris", []string{"http://app.example.com/cb"}), "redirectUris", "loopback")
	field(with("redirectUris", []string{"https://app.example.com/cb#x"}), "redirectUris", "fragment")
	field(with("redirectUris", []string{"https://*.example.com/cb"}), "redirectUris", "wildcard")
	field(with("redirectUris", []string{"com.example.app:/cb"}), "redirectUris", "public")
	field(with("grantTypes", []string{"implicit"}), "grantTypes", "not a grant type")
	field(with("scopes", []string{"admin"}), "scopes", "not a scope")
	field(with("type", "service"), "type", "confidential or public")
	field(map[string]any{"type": "public", "grantTypes": []string{"client_credentials"}}, "name", "must not be empty")
	wantProblem(t, s.do("POST", clientsPath, with("clientSecret", "mine"), withToken(admin)), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", clientsPath, with("RedirectUris", []string{}), withToken(admin)), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", clientsPath, `{"name":"App","type":"public","firstParty":"yes"}`, withToken(admin)), http.StatusBadRequest, "malformed_json")
	wantProblem(t, s.do("POST", clientsPath, `{"name":"App","name":"App"}`, withToken(admin)), http.StatusBadRequest, "malformed_json")

	// A public client has no secret: none in its answer, none to rotate.
	res := s.do("POST", clientsPath, map[string]any{"name": "SPA", "type": "public", "redirectUris": []string{"https://app.example.com/cb"}},
		withToken(admin))
	if strings.Contains(string(res.Body), "clientSecret") {
		t.Errorf("a public client's answer holds a secret: %s", res.Body)
	}
	var spa clientBody
	wantJSON(t, res, http.StatusCreated, &spa)
	wantProblem(t, s.do("POST", clientsPath+"/"+spa.ID+"/secret", nil, withToken(admin)), http.StatusConflict, "public_client")
	wantProblem(t, s.do("POST", clientsPath+"/"+spa.ID+"/secret", `{"clientSecret":"mine"}`, withToken(admin)), http.StatusBadRequest, "unknown_field")
	// The type is fixed; the whole is judged again with the fields kept.
	p := wantProblem(t, s.do("PUT", clientsPath+"/"+spa.ID, map[string]any{"type": "confidential"}, withToken(admin)), http.StatusBadRequest, "validation_failed")
	if p.Errors[0].Field != "type" {
		t.Errorf("errors %+v", p.Errors)
	}
	p = wantProblem(t, s.do("PUT", clientsPath+"/"+spa.ID, map[string]any{"redirectUris": []string{}}, withToken(admin)), http.StatusBadRequest, "validation_failed")
	if p.Errors[0].Field != "redirectUris" {
		t.Errorf("errors %+v", p.Errors)
	}
	var same clientBody
	wantJSON(t, s.do("PUT", clientsPath+"/"+spa.ID, map[string]any{"type": "public", "name": "SPA"}, withToken(admin)), http.StatusOK, &same)
	if same.UpdatedAt != spa.UpdatedAt || !slices.Equal(same.RedirectURIs, spa.RedirectURIs) {
		t.Errorf("an update that changes nothing: %+v, was %+v", same, spa)
	}
}
