package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

var (
	secretField = regexp.MustCompile(`id="client-secret" type="text" readonly value="([A-Za-z0-9_-]{43})"`)
	clientIDOf  = regexp.MustCompile(`<code id="client-id">([0-9a-f]{24})</code>`)
)

// newClientForm is the create form as a browser sends it, defaults ticked.
func newClientForm(name string) url.Values {
	return url.Values{"name": {name}, "clientType": {"confidential"},
		"redirectUris":           {"https://grafana.example.com/login/generic_oauth\r\n\r\nhttp://127.0.0.1/cb\r\n"},
		"postLogoutRedirectUris": {"https://grafana.example.com/"},
		"grantTypes":             {"authorization_code", "refresh_token"}, "scopes": {"openid", "email", "profile"},
		"idTokenSigningAlg": {"RS256"}}
}

// adminVisitor is a signed-in admin of the console.
func (e *env) adminVisitor() *visitorSession {
	e.t.Helper()
	e.addUser("root@example.com", true)
	v := e.visitor()
	wantRedirect(e.t, v.signIn("/admin/", "root@example.com", custPassword), "/admin/")
	return v
}

func TestAdminClients_create_edit_rotate_delete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.adminVisitor()
	ctx := context.Background()

	res := v.get("/admin/clients")
	wantPage(t, res, http.StatusOK, "Clients")
	for _, want := range []string{`id="no-clients"`, `href="/admin/clients" aria-current="page"`, `id="type-confidential" name="clientType" value="confidential" checked`,
		`id="grant-authorization_code" name="grantTypes" value="authorization_code" checked`, `id="grant-client_credentials" name="grantTypes" value="client_credentials">`,
		`id="scope-offline_access" name="scopes" value="offline_access" checked`, `id="alg-RS256" name="idTokenSigningAlg" value="RS256" checked`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the create form lacks %s", want)
		}
	}

	// Created: the page of the client, with its secret this once.
	res = v.post("/admin/clients", newClientForm("Grafana"))
	wantPage(t, res, http.StatusOK, "Grafana")
	secret, id := secretField.FindStringSubmatch(res.Body), clientIDOf.FindStringSubmatch(res.Body)
	if secret == nil || id == nil {
		t.Fatalf("no secret or id shown:\n%s", res.Body)
	}
	c, err := e.svc.OAuthClients.AuthenticateClient(ctx, id[1], secret[1])
	if err != nil {
		t.Fatalf("the secret shown does not authenticate the client: %v", err)
	}
	if len(c.RedirectURIs) != 2 || c.RedirectURIs[1] != "http://127.0.0.1/cb" || len(c.Scopes) != 3 || c.FirstParty ||
		c.PostLogoutRedirectURIs[0] != "https://grafana.example.com/" {
		t.Errorf("the client stored: %+v", c)
	}
	page := "/admin/clients/" + id[1]
	if body := v.get(page).Body; secretField.MatchString(body) || strings.Contains(body, secret[1]) {
		t.Error("the client's page shows the secret again")
	}
	list := v.get("/admin/clients").Body
	for _, want := range []string{`<a href="` + page + `">Grafana</a>`, "<code>" + id[1] + "</code>", "authorization_code, refresh_token",
		"<code>https://grafana.example.com/login/generic_oauth</code>"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %s", want)
		}
	}

	// Edited: every field as the form sends it.
	edit := newClientForm("Grafana Ops")
	edit.Del("clientType")
	edit.Set("firstParty", "yes")
	edit["scopes"] = []string{"openid"}
	edit.Set("idTokenSigningAlg", "EdDSA")
	wantRedirect(t, v.post(page, edit), page+"?done=saved")
	if c, _ := e.svc.OAuthClients.Client(ctx, id[1]); c.Name != "Grafana Ops" || !c.FirstParty || len(c.Scopes) != 1 || c.IDTokenSigningAlg != domain.IDTokenEdDSA {
		t.Errorf("after the edit: %+v", c)
	}
	res = v.get(page + "?done=saved")
	if !strings.Contains(res.Body, "The changes are saved.") || !strings.Contains(res.Body, `id="firstParty" name="firstParty" value="yes" checked`) {
		t.Errorf("the page after the edit:\n%s", res.Body)
	}

	// A new secret: asked first, shown once; the old one stops.
	wantPage(t, v.get(page+"/secret"), http.StatusOK, "Give Grafana Ops a new secret?")
	res = v.post(page+"/secret", url.Values{})
	fresh := secretField.FindStringSubmatch(res.Body)
	if res.Status != http.StatusOK || fresh == nil || fresh[1] == secret[1] {
		t.Fatalf("the rotation: %d\n%s", res.Status, res.Body)
	}
	if _, err := e.svc.OAuthClients.AuthenticateClient(ctx, id[1], secret[1]); err == nil {
		t.Error("the old secret still works")
	}

	// Deleted: asked first, then gone.
	wantPage(t, v.get(page+"/delete"), http.StatusOK, "Delete Grafana Ops?")
	wantRedirect(t, v.post(page+"/delete", url.Values{}), "/admin/clients?done=deleted")
	if _, err := e.svc.OAuthClients.Client(ctx, id[1]); err == nil {
		t.Error("the client is still there")
	}
	wantPage(t, v.get(page), http.StatusNotFound, "Client not found")
	wantPage(t, v.get("/admin/clients/not-an-id"), http.StatusBadRequest, "Client not found")
}

func TestAdminClients_refusals_land_at_their_fields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.adminVisitor()

	bad := newClientForm("")
	bad.Set("redirectUris", "https://ok.example/cb\nhttps://app.example/cb#frag")
	bad["grantTypes"] = nil
	res := v.post("/admin/clients", bad)
	wantPage(t, res, http.StatusBadRequest, "Clients")
	for _, want := range []string{`id="name-error"`, `id="redirectUris-error"`, "The redirect URIs entry 2", `id="grantTypes-error"`,
		"The grant types must hold at least one value.", `<a href="#redirectUris">`,
		// What was typed comes back.
		"https://app.example/cb#frag</textarea>", `aria-invalid="true"`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the refused form lacks %s\n", want)
		}
	}
	if n := e.clientCount(); n != 0 {
		t.Errorf("%d clients after a refusal", n)
	}

	// A public client: no secret, no rotation.
	pub := newClientForm("Mobile")
	pub.Set("clientType", "public")
	pub.Set("redirectUris", "com.example.app:/cb")
	res = v.post("/admin/clients", pub)
	if res.Status != http.StatusOK || secretField.MatchString(res.Body) || strings.Contains(res.Body, `id="rotate-secret"`) {
		t.Errorf("a public client: %d\n%s", res.Status, res.Body)
	}
	page := "/admin/clients/" + clientIDOf.FindStringSubmatch(res.Body)[1]
	wantPage(t, v.post(page+"/secret", url.Values{}), http.StatusConflict, "Mobile")

	// An edit refused keeps what was typed, beside its field.
	edit := newClientForm("Mobile")
	edit.Set("redirectUris", "ftp://nope")
	res = v.post(page, edit)
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "ftp://nope</textarea>") || !strings.Contains(res.Body, `id="redirectUris-error"`) {
		t.Errorf("the refused edit: %d\n%s", res.Status, res.Body)
	}
}

func TestAdminClients_are_for_admins_only(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)
	wantPage(t, v.get("/admin/clients"), http.StatusForbidden, "")
	wantRedirect(t, e.get("/admin/clients"), "/admin/login?next=%2Fadmin%2Fclients")
	admin := e.adminVisitor()
	wantPage(t, admin.post("/admin/clients", newClientForm("X"), withHeader("Sec-Fetch-Site", "cross-site")), http.StatusForbidden, "")
	if n := e.clientCount(); n != 0 {
		t.Errorf("%d clients", n)
	}
}

// clientCount counts the registered clients.
func (e *env) clientCount() int {
	e.t.Helper()
	page, err := e.svc.OAuthClients.ListAsOperator(context.Background(), domain.Page[domain.OAuthClientID]{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(page.Items)
}
