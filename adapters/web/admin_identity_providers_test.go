package web_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// idpSecret is the client secret the tests type; no page may show it.
const idpSecret = "acme-Client-Secret-0123456789"

// newIdpForm is the create form of an OpenID provider as a browser sends
// it, the defaults ticked.
func newIdpForm(slug, name string) url.Values {
	return url.Values{"slug": {slug}, "displayName": {name}, "kind": {"oidc"}, "issuer": {"https://login.acme.example"},
		"clientId": {"userd-at-acme"}, "clientSecret": {idpSecret}, "scopes": {""}, "allowedDomains": {""},
		"autoCreate": {"yes"}, "trustEmailVerified": {"yes"}, "enabled": {"yes"},
		"authUrl": {""}, "tokenUrl": {""}, "apiUrl": {""}}
}

// storedIdp is the provider slug as the store keeps it, its secret
// opened.
func (e *env) storedIdp(slug string) domain.IdentityProvider {
	e.t.Helper()
	p, err := e.store.IdentityProviders(e.box).Provider(context.Background(), slug)
	if err != nil {
		e.t.Fatalf("provider %s: %v", slug, err)
	}
	return p
}

func TestAdminIdps_create_edit_delete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.adminVisitor()

	res := v.get("/admin/identity-providers")
	wantPage(t, res, http.StatusOK, "Sign-in providers")
	for _, want := range []string{`id="no-providers"`, `href="/admin/identity-providers" aria-current="page"`,
		`id="kind-oidc" name="kind" value="oidc" checked`, `id="kind-github" name="kind" value="github">`,
		`id="autoCreate" name="autoCreate" value="yes" checked`, `id="enabled" name="enabled" value="yes" checked`,
		`id="clientSecret" name="clientSecret" type="password"`, kit.PublicURL + "/auth/idp/&lt;slug&gt;/callback"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the create form lacks %s", want)
		}
	}

	form := newIdpForm("acme", "Acme SSO")
	form.Set("scopes", "openid email  groups")
	form.Set("allowedDomains", "acme.example, Example.org")
	form.Del("trustEmailVerified")
	page := "/admin/identity-providers/acme"
	wantRedirect(t, v.post("/admin/identity-providers", form), page+"?done=created")
	p := e.storedIdp("acme")
	if p.DisplayName != "Acme SSO" || p.Kind != domain.IdentityProviderOIDC || p.ClientSecret != idpSecret ||
		!slices.Equal(p.Scopes, []string{"openid", "email", "groups"}) || !slices.Equal(p.AllowedDomains, []string{"acme.example", "example.org"}) ||
		!p.AutoCreate || p.TrustEmailVerified || !p.Enabled {
		t.Errorf("the provider stored: %+v", p)
	}
	res = v.get(page + "?done=created")
	wantPage(t, res, http.StatusOK, "Acme SSO")
	for _, want := range []string{`<code id="callback-url">` + kit.PublicURL + `/auth/idp/acme/callback</code>`,
		"The provider is registered.", `value="https://login.acme.example"`, `value="openid email groups"`,
		`value="acme.example example.org"`, `id="trustEmailVerified" name="trustEmailVerified" value="yes" aria-describedby`,
		`id="clientSecret" name="clientSecret" type="password"`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the provider's page lacks %s", want)
		}
	}
	// Fixed once registered: no slug, kind or GitHub endpoints to edit.
	for _, unwanted := range []string{`id="slug"`, `name="kind"`, `id="authUrl"`, idpSecret} {
		if strings.Contains(res.Body, unwanted) {
			t.Errorf("the provider's page has %s", unwanted)
		}
	}
	list := v.get("/admin/identity-providers").Body
	for _, want := range []string{`<a href="` + page + `">Acme SSO</a>`, "<code>acme</code>", "OpenID Connect",
		"<code>" + kit.PublicURL + "/auth/idp/acme/callback</code>"} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
	if strings.Contains(list, idpSecret) {
		t.Error("the list shows the secret")
	}

	// Edited: a blank secret keeps the stored one; blank scopes are the
	// kind's defaults.
	edit := newIdpForm("", "Acme")
	edit.Del("slug")
	edit.Del("kind")
	edit.Set("clientSecret", "")
	edit.Del("enabled")
	wantRedirect(t, v.post(page, edit), page+"?done=saved")
	p = e.storedIdp("acme")
	if p.DisplayName != "Acme" || p.ClientSecret != idpSecret || p.Enabled || !p.TrustEmailVerified ||
		!slices.Equal(p.Scopes, domain.DefaultOIDCProviderScopes) || len(p.AllowedDomains) != 0 {
		t.Errorf("after the edit: %+v", p)
	}
	if res := v.get(page + "?done=saved"); !strings.Contains(res.Body, "The changes are saved.") ||
		!strings.Contains(res.Body, `id="enabled" name="enabled" value="yes" aria-describedby`) {
		t.Errorf("the page after the edit:\n%s", res.Body)
	}
	edit.Set("clientSecret", "a-new-Secret-of-acme")
	wantRedirect(t, v.post(page, edit), page+"?done=saved")
	if p := e.storedIdp("acme"); p.ClientSecret != "a-new-Secret-of-acme" {
		t.Error("a typed secret did not replace the stored one")
	}

	// Deleted: asked first, then gone.
	wantPage(t, v.get(page+"/delete"), http.StatusOK, "Delete Acme?")
	wantRedirect(t, v.post(page+"/delete", url.Values{}), "/admin/identity-providers?done=deleted")
	if _, err := e.store.IdentityProviders(e.box).Provider(context.Background(), "acme"); err == nil {
		t.Error("the provider is still there")
	}
	wantPage(t, v.get(page), http.StatusNotFound, "Sign-in provider not found")
	wantPage(t, v.post(page+"/delete", url.Values{}), http.StatusNotFound, "Sign-in provider not found")
	wantPage(t, v.get("/admin/identity-providers/Not%20A%20Slug"), http.StatusNotFound, "Sign-in provider not found")
}

func TestAdminIdps_github_takes_github_com_by_default(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.adminVisitor()
	form := newIdpForm("github", "GitHub")
	form.Set("kind", "github")
	form.Set("issuer", "")
	wantRedirect(t, v.post("/admin/identity-providers", form), "/admin/identity-providers/github?done=created")
	p := e.storedIdp("github")
	if p.Kind != domain.IdentityProviderGitHub || p.AuthURL != domain.GitHubAuthURL || p.APIURL != domain.GitHubAPIURL ||
		!slices.Equal(p.Scopes, domain.DefaultGitHubProviderScopes) {
		t.Errorf("the provider stored: %+v", p)
	}
	res := v.get("/admin/identity-providers/github")
	if strings.Contains(res.Body, `id="issuer"`) || !strings.Contains(res.Body, `value="https://api.github.com"`) {
		t.Errorf("a github provider's edit form:\n%s", res.Body)
	}

	// GitHub Enterprise: its own endpoints; cleared, github.com's again.
	edit := url.Values{"displayName": {"GitHub Enterprise"}, "clientId": {"x"}, "clientSecret": {""}, "scopes": {""},
		"allowedDomains": {""}, "autoCreate": {"yes"}, "enabled": {"yes"},
		"authUrl": {"https://github.acme.example/login/oauth/authorize"}, "tokenUrl": {"https://github.acme.example/login/oauth/access_token"},
		"apiUrl": {"https://github.acme.example/api/v3"}}
	wantRedirect(t, v.post("/admin/identity-providers/github", edit), "/admin/identity-providers/github?done=saved")
	if p := e.storedIdp("github"); p.APIURL != "https://github.acme.example/api/v3" || p.ClientSecret != idpSecret {
		t.Errorf("after the edit: %+v", p)
	}
	edit.Set("apiUrl", "")
	wantRedirect(t, v.post("/admin/identity-providers/github", edit), "/admin/identity-providers/github?done=saved")
	if p := e.storedIdp("github"); p.APIURL != domain.GitHubAPIURL {
		t.Errorf("a cleared endpoint: %q", p.APIURL)
	}
}

func TestAdminIdps_refusals_land_at_their_fields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.adminVisitor()

	bad := newIdpForm("Not A Slug", "Acme SSO")
	bad.Set("issuer", "")
	bad.Set("clientSecret", "")
	bad.Set("allowedDomains", "acme.example @nope")
	res := v.post("/admin/identity-providers", bad)
	wantPage(t, res, http.StatusBadRequest, "Sign-in providers")
	for _, want := range []string{`id="slug-error"`, "The slug may hold lower-case letters, digits and hyphens only.",
		`id="clientSecret-error"`, "The client secret must not be empty.", `id="allowedDomains-error"`,
		`<a href="#slug">`, `value="Not A Slug"`, `value="Acme SSO"`, `value="acme.example @nope"`, `aria-invalid="true"`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the refused form lacks %s", want)
		}
	}
	// An oidc provider without an issuer: at its field, the secret typed
	// not shown again.
	bad = newIdpForm("acme", "Acme SSO")
	bad.Set("issuer", "")
	res = v.post("/admin/identity-providers", bad)
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, `id="issuer-error"`) || strings.Contains(res.Body, idpSecret) {
		t.Errorf("no issuer: %d\n%s", res.Status, res.Body)
	}

	wantRedirect(t, v.post("/admin/identity-providers", newIdpForm("acme", "Acme SSO")), "/admin/identity-providers/acme?done=created")
	res = v.post("/admin/identity-providers", newIdpForm("acme", "Acme again"))
	if res.Status != http.StatusConflict || !strings.Contains(res.Body, "Another provider has this slug.") || !strings.Contains(res.Body, `id="slug-error"`) {
		t.Errorf("a slug taken: %d\n%s", res.Status, res.Body)
	}

	// An edit refused keeps what was typed, beside its field.
	edit := newIdpForm("", "")
	edit.Set("issuer", "http://login.acme.example")
	res = v.post("/admin/identity-providers/acme", edit)
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, `id="displayName-error"`) ||
		!strings.Contains(res.Body, `id="issuer-error"`) || !strings.Contains(res.Body, `value="http://login.acme.example"`) ||
		strings.Contains(res.Body, idpSecret) {
		t.Errorf("the refused edit: %d\n%s", res.Status, res.Body)
	}
	if p := e.storedIdp("acme"); p.DisplayName != "Acme SSO" {
		t.Errorf("a refused edit changed the provider: %+v", p)
	}
}

func TestAdminIdps_are_for_admins_only(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)
	wantPage(t, v.get("/admin/identity-providers"), http.StatusForbidden, "")
	wantRedirect(t, e.get("/admin/identity-providers"), "/admin/login?next=%2Fadmin%2Fidentity-providers")
	admin := e.adminVisitor()
	wantPage(t, admin.post("/admin/identity-providers", newIdpForm("acme", "Acme"), withHeader("Sec-Fetch-Site", "cross-site")),
		http.StatusForbidden, "")
	if _, err := e.store.IdentityProviders(e.box).Provider(context.Background(), "acme"); err == nil {
		t.Error("a cross-site form registered a provider")
	}
}
