package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// providerBody is the provider representation; decoding with
// DisallowUnknownFields proves that no secret (nor a hint of one) is in
// it.
type providerBody struct {
	Slug               string   `json:"slug"`
	DisplayName        string   `json:"displayName"`
	Kind               string   `json:"kind"`
	Issuer             *string  `json:"issuer"`
	ClientID           string   `json:"clientId"`
	Scopes             []string `json:"scopes"`
	AllowedDomains     []string `json:"allowedDomains"`
	AutoCreate         bool     `json:"autoCreate"`
	TrustEmailVerified bool     `json:"trustEmailVerified"`
	Enabled            bool     `json:"enabled"`
	AuthURL            *string  `json:"authUrl"`
	TokenURL           *string  `json:"tokenUrl"`
	APIURL             *string  `json:"apiUrl"`
	CreatedAt          string   `json:"createdAt"`
	UpdatedAt          string   `json:"updatedAt"`
}

// identityBody is an entry of GET /api/users/{id}/identities.
type identityBody struct {
	Provider   string `json:"provider"`
	Subject    string `json:"subject"`
	Email      string `json:"email"`
	LinkedAt   string `json:"linkedAt"`
	LastUsedAt string `json:"lastUsedAt"`
}

const (
	providersPath = "/api/identity-providers"
	// acmeSecret and githubSecret are the client secrets the tests give;
	// no answer, log line or audit event may hold them.
	acmeSecret   = "acme-client-secret-0123456789"
	githubSecret = "github-client-secret-9876543210"
)

// acme is the body of an oidc provider's create.
func acme() map[string]any {
	return map[string]any{"slug": "acme", "displayName": "Acme SSO", "kind": "oidc",
		"issuer": "https://sso.acme.example", "clientId": "userd", "clientSecret": acmeSecret}
}

// createProvider registers a provider as the admin and returns the answer.
func (s *testServer) createProvider(admin string, body map[string]any) providerBody {
	s.t.Helper()
	var p providerBody
	wantJSON(s.t, s.do("POST", providersPath, body, withToken(admin)), http.StatusCreated, &p)
	return p
}

// storedProvider reads the provider slug from the store, its secret
// opened.
func (s *testServer) storedProvider(slug string) domain.IdentityProvider {
	s.t.Helper()
	p, err := s.store.IdentityProviders(s.box).Provider(context.Background(), slug)
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// linkIdentity links the user's identity at provider through the store,
// as a sign-in through the provider would.
func (s *testServer) linkIdentity(user, provider, subject string) {
	s.t.Helper()
	now := s.clock.Now()
	err := s.store.Identities().LinkIdentity(context.Background(), domain.UserIdentity{UserID: domain.UserID(user),
		Provider: provider, Subject: subject, Email: "ada@example.com", LinkedAt: now, LastUsedAt: now})
	if err != nil {
		s.t.Fatal(err)
	}
}

// noSecretIn fails t when res holds either client secret. (That a
// provider's answer has no member for one, wantJSON proves.)
func noSecretIn(t *testing.T, what string, res response) {
	t.Helper()
	body := string(res.Body)
	if strings.Contains(body, acmeSecret) || strings.Contains(body, githubSecret) {
		t.Errorf("%s: the answer holds a secret: %s", what, body)
	}
}

func TestIdentityProviders_lifecycle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	admin := s.adminToken()

	res := s.do("POST", providersPath, acme(), withToken(admin))
	noSecretIn(t, "create", res)
	var created providerBody
	wantJSON(t, res, http.StatusCreated, &created)
	if res.Header.Get("Location") != providersPath+"/acme" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", res.Header)
	}
	if created.Slug != "acme" || created.Kind != "oidc" || created.Issuer == nil || *created.Issuer != "https://sso.acme.example" ||
		created.AuthURL != nil || created.TokenURL != nil || created.APIURL != nil ||
		!slices.Equal(created.Scopes, []string{"openid", "email", "profile"}) ||
		created.AllowedDomains == nil || len(created.AllowedDomains) != 0 ||
		!created.AutoCreate || !created.TrustEmailVerified || !created.Enabled {
		t.Fatalf("created %+v: not the contract's defaults", created)
	}
	if got := s.storedProvider("acme").ClientSecret; got != acmeSecret {
		t.Fatalf("stored secret %q", got)
	}

	// GitHub: its endpoints by default, no issuer.
	res = s.do("POST", providersPath, map[string]any{"slug": "github", "displayName": "GitHub", "kind": "github",
		"clientId": "Iv1.abc", "clientSecret": githubSecret, "allowedDomains": []string{"Example.COM"}}, withToken(admin))
	noSecretIn(t, "create github", res)
	var gh providerBody
	wantJSON(t, res, http.StatusCreated, &gh)
	if gh.Issuer != nil || gh.AuthURL == nil || *gh.AuthURL != domain.GitHubAuthURL || gh.TokenURL == nil ||
		*gh.TokenURL != domain.GitHubTokenURL || gh.APIURL == nil || *gh.APIURL != domain.GitHubAPIURL ||
		!slices.Equal(gh.Scopes, []string{"read:user", "user:email"}) || !slices.Equal(gh.AllowedDomains, []string{"example.com"}) {
		t.Fatalf("created %+v", gh)
	}

	var list []providerBody
	res = s.do("GET", providersPath, nil, withToken(admin))
	noSecretIn(t, "list", res)
	wantJSON(t, res, http.StatusOK, &list)
	if len(list) != 2 || list[0].Slug != "acme" || list[1].Slug != "github" {
		t.Fatalf("list %+v", list)
	}
	var got providerBody
	res = s.do("GET", providersPath+"/acme", nil, withToken(admin))
	noSecretIn(t, "get", res)
	wantJSON(t, res, http.StatusOK, &got)
	if got.ClientID != "userd" || got.DisplayName != "Acme SSO" {
		t.Errorf("GET = %+v", got)
	}

	// Fields absent are kept, the secret too; the current slug and kind
	// may be sent.
	s.clock.Advance(1e9)
	var updated providerBody
	res = s.do("PUT", providersPath+"/acme", map[string]any{"slug": "acme", "kind": "oidc", "enabled": false,
		"scopes": []string{"openid", "email"}, "allowedDomains": []string{"acme.example"}, "issuer": nil}, withToken(admin))
	noSecretIn(t, "update", res)
	wantJSON(t, res, http.StatusOK, &updated)
	if updated.Enabled || !slices.Equal(updated.Scopes, []string{"openid", "email"}) ||
		!slices.Equal(updated.AllowedDomains, []string{"acme.example"}) || updated.DisplayName != "Acme SSO" ||
		updated.Issuer == nil || *updated.Issuer != "https://sso.acme.example" || updated.UpdatedAt == created.UpdatedAt ||
		updated.CreatedAt != created.CreatedAt {
		t.Errorf("PUT = %+v", updated)
	}
	if got := s.storedProvider("acme").ClientSecret; got != acmeSecret {
		t.Errorf("after an update without a secret, the stored secret is %q", got)
	}
	// A new secret replaces the old one, and is not shown either.
	res = s.do("PUT", providersPath+"/acme", map[string]any{"clientSecret": "acme-new-secret-42"}, withToken(admin))
	if strings.Contains(string(res.Body), "acme-new-secret-42") {
		t.Errorf("the new secret is in the answer: %s", res.Body)
	}
	wantJSON(t, res, http.StatusOK, &updated)
	if got := s.storedProvider("acme").ClientSecret; got != "acme-new-secret-42" {
		t.Errorf("after an update of the secret, the stored secret is %q", got)
	}

	res = s.do("DELETE", providersPath+"/acme", nil, withToken(admin))
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	wantProblem(t, s.do("GET", providersPath+"/acme", nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("DELETE", providersPath+"/acme", nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("PUT", providersPath+"/acme", map[string]any{"enabled": true}, withToken(admin)), http.StatusNotFound, "not_found")

	// The trail has the changes, by field name; no secret is in it, nor
	// in any log line.
	events, _ := s.auditPage(admin, "?limit=200")
	var trail []string
	for _, e := range events {
		if strings.Contains(e.Detail, acmeSecret) || strings.Contains(e.Detail, githubSecret) || strings.Contains(e.Detail, "acme-new-secret-42") {
			t.Errorf("audit event %+v holds a secret", e)
		}
		if strings.HasPrefix(e.Type, "identity_provider.") {
			trail = append(trail, e.Type+" "+e.Detail)
		}
	}
	want := []string{
		"identity_provider.created provider=acme kind=oidc",
		"identity_provider.created provider=github kind=github",
		"identity_provider.updated provider=acme fields=scopes,allowedDomains,enabled",
		"identity_provider.updated provider=acme fields=clientSecret",
		"identity_provider.deleted provider=acme",
	}
	if !slices.Equal(trail, want) {
		t.Errorf("trail\n  %q\nwant\n  %q", trail, want)
	}
	logs := s.logs.String()
	for _, secret := range []string{acmeSecret, githubSecret, "acme-new-secret-42"} {
		if strings.Contains(logs, secret) {
			t.Errorf("a log line holds the secret %q", secret)
		}
	}
}

// Every route answers in the contract's order: 401, 400, 403, 404.
func TestIdentityProviders_order_of_checks(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	_, cust := s.customer("Ada", "ada@example.com")
	customer := cust.AccessToken
	for _, r := range []struct {
		method string
		body   any
	}{
		{"GET", nil},
		{"PUT", map[string]any{"displayName": "New"}},
		{"DELETE", nil},
	} {
		wantProblem(t, s.do(r.method, providersPath+"/Bad_Slug", r.body), http.StatusUnauthorized, "unauthorized")
		wantProblem(t, s.do(r.method, providersPath+"/Bad_Slug", r.body, withToken(customer)), http.StatusBadRequest, "invalid_id")
		wantProblem(t, s.do(r.method, providersPath+"/"+strings.Repeat("a", 33), r.body, withToken(admin)), http.StatusBadRequest, "invalid_id")
		wantProblem(t, s.do(r.method, providersPath+"/missing", r.body, withToken(customer)), http.StatusForbidden, "forbidden")
		wantProblem(t, s.do(r.method, providersPath+"/missing", r.body, withToken(admin)), http.StatusNotFound, "not_found")
	}
	// The body's form is judged before the caller's right.
	bad := acme()
	bad["issuer"] = "http://sso.acme.example"
	wantProblem(t, s.do("POST", providersPath, bad), http.StatusUnauthorized, "unauthorized")
	p := wantProblem(t, s.do("POST", providersPath, bad, withToken(customer)), http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "issuer" {
		t.Errorf("errors %+v", p.Errors)
	}
	wantProblem(t, s.do("POST", providersPath, acme(), withToken(customer)), http.StatusForbidden, "forbidden")
	p = wantProblem(t, s.do("PUT", providersPath+"/missing", map[string]any{"issuer": "http://sso.acme.example"}, withToken(customer)),
		http.StatusBadRequest, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "issuer" {
		t.Errorf("errors %+v", p.Errors)
	}
	wantProblem(t, s.do("GET", providersPath, nil), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("GET", providersPath, nil, withToken(customer)), http.StatusForbidden, "forbidden")
	var none []providerBody
	wantJSON(t, s.do("GET", providersPath, nil, withToken(admin)), http.StatusOK, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("no providers: %v, want []", none)
	}
}

func TestIdentityProviders_refusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	field := func(body any, want string, msg string) {
		t.Helper()
		res := s.do("POST", providersPath, body, withToken(admin))
		noSecretIn(t, "refused create", res)
		p := wantProblem(t, res, http.StatusBadRequest, "validation_failed")
		if len(p.Errors) == 0 || p.Errors[0].Field != want || !strings.Contains(p.Errors[0].Message, msg) {
			t.Errorf("errors %+v, want %s: %q", p.Errors, want, msg)
		}
	}
	with := func(k string, v any) map[string]any {
		b := acme()
		b[k] = v
		return b
	}
	without := func(k string) map[string]any {
		b := acme()
		delete(b, k)
		return b
	}
	field(with("slug", "Acme"), "slug", "lower-case letters")
	field(with("kind", "saml"), "kind", "oidc or github")
	field(without("clientSecret"), "clientSecret", "is required")
	field(without("issuer"), "issuer", "is required for an oidc provider")
	field(with("authUrl", "https://github.acme.example/login/oauth/authorize"), "authUrl", "github provider only")
	field(with("allowedDomains", []string{"not a domain"}), "allowedDomains", "email domain")
	wantProblem(t, s.do("POST", providersPath, with("secret", "x"), withToken(admin)), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", providersPath, with("ClientSecret", "x"), withToken(admin)), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", providersPath, with("clientSecretSet", true), withToken(admin)), http.StatusBadRequest, "unknown_field")
	wantProblem(t, s.do("POST", providersPath, `{"slug":"acme","enabled":"yes"}`, withToken(admin)), http.StatusBadRequest, "malformed_json")

	s.createProvider(admin, acme())
	p := wantProblem(t, s.do("POST", providersPath, acme(), withToken(admin)), http.StatusConflict, "slug_taken")
	if len(p.Errors) != 1 || p.Errors[0].Field != "slug" {
		t.Errorf("errors %+v", p.Errors)
	}
	// The slug and the kind are fixed; the whole is judged again.
	for k, v := range map[string]string{"slug": "acme2", "kind": "github"} {
		p := wantProblem(t, s.do("PUT", providersPath+"/acme", map[string]any{k: v}, withToken(admin)), http.StatusBadRequest, "validation_failed")
		if p.Errors[0].Field != k {
			t.Errorf("change of %s: errors %+v", k, p.Errors)
		}
	}
	p = wantProblem(t, s.do("PUT", providersPath+"/acme", map[string]any{"tokenUrl": "https://sso.acme.example/token"}, withToken(admin)),
		http.StatusBadRequest, "validation_failed")
	if p.Errors[0].Field != "tokenUrl" {
		t.Errorf("errors %+v", p.Errors)
	}
	wantProblem(t, s.do("PUT", providersPath+"/acme", `{"clientSecret":"x","clientsecret":"y"}`, withToken(admin)), http.StatusBadRequest, "unknown_field")
	if got := s.storedProvider("acme").ClientSecret; got != acmeSecret {
		t.Errorf("a refused update changed the secret to %q", got)
	}
}

func TestIdentities_list_and_unlink(t *testing.T) {
	t.Parallel()
	hooks := &kit.WebhookRecorder{}
	s := newTestServer(t, withAudit(), func(c *serverConfig) { c.webhooks = hooks })
	admin := s.adminToken()
	ada, cust := s.customer("Ada", "ada@example.com")
	bob, bobTok := s.customer("Bob", "bob@example.com")
	s.createProvider(admin, acme())
	s.createProvider(admin, map[string]any{"slug": "github", "displayName": "GitHub", "kind": "github",
		"clientId": "Iv1.abc", "clientSecret": githubSecret})
	s.linkIdentity(ada.ID, "acme", "ada-at-acme")
	s.clock.Advance(1e9)
	s.linkIdentity(ada.ID, "github", "583231")

	var mine, hers []identityBody
	wantJSON(t, s.do("GET", "/api/users/me/identities", nil, withToken(cust.AccessToken)), http.StatusOK, &mine)
	wantJSON(t, s.do("GET", "/api/users/"+ada.ID+"/identities", nil, withToken(admin)), http.StatusOK, &hers)
	if len(mine) != 2 || mine[0].Provider != "acme" || mine[0].Subject != "ada-at-acme" || mine[0].Email != "ada@example.com" ||
		mine[1].Provider != "github" || mine[1].Subject != "583231" || !slices.Equal(mine, hers) {
		t.Fatalf("identities: me %+v, admin %+v", mine, hers)
	}
	var none []identityBody
	wantJSON(t, s.do("GET", "/api/users/me/identities", nil, withToken(bobTok.AccessToken)), http.StatusOK, &none)
	if none == nil || len(none) != 0 {
		t.Errorf("Bob's identities: %v, want []", none)
	}

	// The order of checks: 401, 400, 403, 404.
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/users/%s/identities"},
		{"DELETE", "/api/users/%s/identities/acme"},
	} {
		at := func(id string) string { return strings.Replace(r.path, "%s", id, 1) }
		wantProblem(t, s.do(r.method, at("nope"), nil), http.StatusUnauthorized, "unauthorized")
		wantProblem(t, s.do(r.method, at("nope"), nil, withToken(bobTok.AccessToken)), http.StatusBadRequest, "invalid_id")
		wantProblem(t, s.do(r.method, at(ada.ID), nil, withToken(bobTok.AccessToken)), http.StatusForbidden, "forbidden")
		wantProblem(t, s.do(r.method, at(missingID), nil, withToken(bobTok.AccessToken)), http.StatusForbidden, "forbidden")
		wantProblem(t, s.do(r.method, at(missingID), nil, withToken(admin)), http.StatusNotFound, "not_found")
	}
	// An identity the account does not have, or a provider that is not one.
	wantProblem(t, s.do("DELETE", "/api/users/"+bob.ID+"/identities/acme", nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("DELETE", "/api/users/me/identities/NOPE", nil, withToken(cust.AccessToken)), http.StatusNotFound, "not_found")

	// Ada unlinks her own; an admin unlinks the other. She keeps her
	// password.
	res := s.do("DELETE", "/api/users/me/identities/acme", nil, withToken(cust.AccessToken))
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Fatalf("unlink: %d %s", res.Status, res.Body)
	}
	if res := s.do("DELETE", "/api/users/"+ada.ID+"/identities/github", nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("unlink by an admin: %d %s", res.Status, res.Body)
	}
	wantJSON(t, s.do("GET", "/api/users/me/identities", nil, withToken(cust.AccessToken)), http.StatusOK, &mine)
	if len(mine) != 0 {
		t.Errorf("after the unlinks: %+v", mine)
	}
	wantProblem(t, s.do("DELETE", "/api/users/me/identities/acme", nil, withToken(cust.AccessToken)), http.StatusNotFound, "not_found")

	if _, err := s.svc.Delivery.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	var unlinked []string
	for _, e := range hooks.Sent() {
		if e.Type == domain.WebhookIdentityUnlinked {
			unlinked = append(unlinked, e.Data["userId"].(string)+" "+e.Data["provider"].(string))
		}
	}
	slices.Sort(unlinked)
	if want := []string{ada.ID + " acme", ada.ID + " github"}; !slices.Equal(unlinked, want) {
		t.Errorf("identity.unlinked webhooks %q, want %q", unlinked, want)
	}
	events, _ := s.auditPage(admin, "?type=identity.unlinked")
	var trail []string
	for _, e := range events {
		trail = append(trail, e.ActorID+" "+e.SubjectID+" "+e.Detail)
	}
	adminID := s.createAdmin().ID.String()
	if want := []string{ada.ID + " " + ada.ID + " provider=acme", adminID + " " + ada.ID + " provider=github"}; !slices.Equal(trail, want) {
		t.Errorf("audit trail %q, want %q", trail, want)
	}
}

// An account whose only way to sign in is one identity keeps it: no
// password, no passkey, no other identity.
func TestIdentities_last_sign_in_method(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	s.createProvider(admin, acme())
	s.createProvider(admin, map[string]any{"slug": "github", "displayName": "GitHub", "kind": "github",
		"clientId": "Iv1.abc", "clientSecret": githubSecret})
	now := s.clock.Now()
	eve := domain.User{ID: domain.NewUserID(now), Name: "Eve", Email: "eve@example.com", Profiles: domain.Profiles{domain.ProfileCustomer},
		EmailVerified: true, CreatedAt: now, UpdatedAt: now}
	if err := s.store.Users().Create(context.Background(), eve); err != nil {
		t.Fatal(err)
	}
	s.linkIdentity(eve.ID.String(), "acme", "eve-at-acme")
	path := "/api/users/" + eve.ID.String() + "/identities/"
	wantProblem(t, s.do("DELETE", path+"acme", nil, withToken(admin)), http.StatusConflict, "last_sign_in_method")

	// With another identity, either may go, but not both.
	s.linkIdentity(eve.ID.String(), "github", "31337")
	if res := s.do("DELETE", path+"acme", nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("unlink with another identity left: %d %s", res.Status, res.Body)
	}
	wantProblem(t, s.do("DELETE", path+"github", nil, withToken(admin)), http.StatusConflict, "last_sign_in_method")
}

// Deleting a provider deletes the identities linked through it.
func TestIdentityProviders_delete_takes_the_identities(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, cust := s.customer("Ada", "ada@example.com")
	s.createProvider(admin, acme())
	s.linkIdentity(ada.ID, "acme", "ada-at-acme")
	if res := s.do("DELETE", providersPath+"/acme", nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", res.Status, res.Body)
	}
	var mine []identityBody
	wantJSON(t, s.do("GET", "/api/users/me/identities", nil, withToken(cust.AccessToken)), http.StatusOK, &mine)
	if len(mine) != 0 {
		t.Errorf("identities after the provider's deletion: %+v", mine)
	}
	// A provider of the same slug made again does not find them.
	s.createProvider(admin, acme())
	wantJSON(t, s.do("GET", "/api/users/"+ada.ID+"/identities", nil, withToken(admin)), http.StatusOK, &mine)
	if len(mine) != 0 {
		t.Errorf("identities after the slug was registered again: %+v", mine)
	}
}
