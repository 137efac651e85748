package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/domain"
)

// seedIdp registers a provider straight in the store.
func (e *env) seedIdp(slug, name string, kind domain.IdentityProviderKind, enabled bool) {
	e.t.Helper()
	k, secret := string(kind), idpSecret
	in := domain.IdentityProviderInput{Slug: &slug, DisplayName: &name, Kind: &k, ClientID: &slug, ClientSecret: &secret, Enabled: &enabled}
	if kind == domain.IdentityProviderOIDC {
		issuer := "https://" + slug + ".example"
		in.Issuer = &issuer
	}
	p, err := domain.NewIdentityProvider(in, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.IdentityProviders(e.box).CreateProvider(context.Background(), p); err != nil {
		e.t.Fatal(err)
	}
}

// seedIdentity links the account of email to an identity at provider.
func (e *env) seedIdentity(email, provider, subject, idpEmail string) {
	e.t.Helper()
	linked := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	err := e.store.Identities().LinkIdentity(context.Background(), domain.UserIdentity{UserID: e.user(email).ID, Provider: provider,
		Subject: subject, Email: domain.Email(idpEmail), LinkedAt: linked, LastUsedAt: linked.Add(49 * time.Hour)})
	if err != nil {
		e.t.Fatal(err)
	}
}

// dropPassword leaves the account of email without a password, as one
// that a provider created.
func (e *env) dropPassword(email string) {
	e.t.Helper()
	_, err := e.store.Users().Update(context.Background(), e.user(email).ID, func(u *domain.User) error {
		u.PasswordHash = ""
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestAccountIdentities_lists_links_and_unlinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	e.seedIdp("acme", "Acme SSO", domain.IdentityProviderOIDC, true)
	e.seedIdp("github", "GitHub", domain.IdentityProviderGitHub, true)
	e.seedIdp("old", "Old SSO", domain.IdentityProviderOIDC, false)
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)

	res := v.get("/account/identities")
	wantPage(t, res, http.StatusOK, "Linked accounts")
	for _, want := range []string{`id="no-identities"`, `href="/account/identities" aria-current="page"`,
		`<form method="post" action="/account/identities/acme/link"><button type="submit" class="secondary" id="link-acme">Link Acme SSO</button></form>`,
		`action="/account/identities/github/link"`, "Link GitHub"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(res.Body, "Old SSO") {
		t.Error("a disabled provider is offered")
	}

	e.seedIdentity("ada@example.com", "acme", "sub-1", "ada@acme.example")
	e.seedIdentity("ada@example.com", "old", "sub-2", "ada@old.example")
	res = v.get(web.IdentityLinkedPath("acme"))
	for _, want := range []string{"Your Acme SSO account is linked.", `<p class="title" id="identity-acme">Acme SSO</p>`, "ada@acme.example",
		"2026-11-02 09:30 UTC", "2026-11-04 10:30 UTC", `action="/account/identities/acme/unlink"`,
		// A disabled provider's identity goes by its slug.
		`id="identity-old">old</p>`, "Link GitHub"} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
	if strings.Contains(res.Body, "Link Acme SSO") {
		t.Error("a linked provider is offered again")
	}
	// The notice names a provider of the page, never the query's text.
	if res := v.get("/account/identities?done=identity-linked&provider=%3Cb%3EEvil"); !strings.Contains(res.Body, "Your account at the provider is linked.") ||
		strings.Contains(res.Body, "Evil") {
		t.Errorf("an unknown provider's notice:\n%s", res.Body)
	}

	wantRedirect(t, v.post("/account/identities/acme/unlink", url.Values{}), "/account/identities?done=unlinked")
	res = v.get("/account/identities?done=unlinked")
	if strings.Contains(res.Body, "ada@acme.example") || !strings.Contains(res.Body, "The account is unlinked") ||
		!strings.Contains(res.Body, "Link Acme SSO") {
		t.Errorf("after the unlink:\n%s", res.Body)
	}
	wantRedirect(t, v.post("/account/identities/acme/unlink", url.Values{}), "/account/identities?done=unlinked-gone")
	wantRedirect(t, v.post("/account/identities/Not%20A%20Slug/unlink", url.Values{}), "/account/identities?done=unlinked-gone")

	// Signed out: the sign-in page; from another site: refused.
	wantRedirect(t, e.get("/account/identities"), "/account/login?next=%2Faccount%2Fidentities")
	wantPage(t, v.post("/account/identities/old/unlink", url.Values{}, withHeader("Sec-Fetch-Site", "cross-site")), http.StatusForbidden, "")
	if !strings.Contains(v.get("/account/identities").Body, "ada@old.example") {
		t.Error("a cross-site form unlinked an identity")
	}
}

func TestAccountIdentities_keep_the_last_way_to_sign_in(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	e.seedIdp("acme", "Acme SSO", domain.IdentityProviderOIDC, true)
	e.seedIdentity("ada@example.com", "acme", "sub-1", "ada@acme.example")
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)
	e.dropPassword("ada@example.com")

	res := v.post("/account/identities/acme/unlink", url.Values{})
	wantPage(t, res, http.StatusConflict, "Linked accounts")
	if !strings.Contains(res.Body, "This is the only way to sign in to your account: set a password or add a passkey first.") ||
		!strings.Contains(res.Body, "ada@acme.example") {
		t.Errorf("the refusal:\n%s", res.Body)
	}
}

func TestAdminUser_lists_and_unlinks_identities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.adminVisitor()
	ada := e.addUser("ada@example.com", false)
	page := "/admin/users/" + string(ada.ID)

	if res := admin.get(page); !strings.Contains(res.Body, "Sign-in identities") || !strings.Contains(res.Body, `id="no-identities"`) {
		t.Errorf("the user's page without identities:\n%s", res.Body)
	}
	e.seedIdp("acme", "Acme SSO", domain.IdentityProviderOIDC, false)
	e.seedIdentity("ada@example.com", "acme", "sub-1", "ada@acme.example")
	res := admin.get(page)
	unlink := page + "/identities/acme/unlink"
	for _, want := range []string{`<th scope="row">Acme SSO</th><td>ada@acme.example</td><td>2026-11-02 09:30 UTC</td><td>2026-11-04 10:30 UTC</td>`,
		`href="` + unlink + `">Unlink…`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the user's page lacks %s", want)
		}
	}

	wantPage(t, admin.get(unlink), http.StatusOK, "Unlink Acme SSO from ada@example.com?")
	wantPage(t, admin.get(page+"/identities/nope/unlink"), http.StatusNotFound, "Linked account not found")

	// The account's only way to sign in: refused on the user's page.
	e.dropPassword("ada@example.com")
	res = admin.post(unlink, url.Values{})
	wantPage(t, res, http.StatusConflict, "ada@example.com")
	if !strings.Contains(res.Body, "This is the account&#39;s only way to sign in") {
		t.Errorf("the refusal:\n%s", res.Body)
	}

	e.seedIdp("github", "GitHub", domain.IdentityProviderGitHub, true)
	e.seedIdentity("ada@example.com", "github", "42", "ada@users.noreply.github.com")
	wantRedirect(t, admin.post(unlink, url.Values{}), page+"?done=identity-unlinked")
	res = admin.get(page + "?done=identity-unlinked")
	if strings.Contains(res.Body, "ada@acme.example") || !strings.Contains(res.Body, "The linked account is unlinked") {
		t.Errorf("after the unlink:\n%s", res.Body)
	}
	wantRedirect(t, admin.post(unlink, url.Values{}), page+"?done=identity-gone")
}
