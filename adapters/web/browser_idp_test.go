package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
)

// TestIdpPages_in_chromium: an admin registers a sign-in provider in the
// console (a refusal first, at its fields), sees its callback URL, the
// list, and their own account's identity on their user's page; then, on
// the account page, their linked accounts, and the refusal to unlink the
// last way to sign in. Each page passes CheckPage (axe-core in the four
// looks, the screenshots of docs/console.md).
func TestIdpPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	root := e.addUser("root@example.com", true)
	origin := pagesServer(t, e)

	b.Open(t, origin+"/admin/identity-providers", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", "root@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Sign-in providers")

	// A slug with spaces: refused beside its field, what was typed kept
	// but the secret.
	b.Do(t, chromedp.SendKeys("#slug", "Acme SSO"), chromedp.SendKeys("#displayName", "Acme SSO"),
		chromedp.SendKeys("#issuer", "https://login.acme.example"),
		chromedp.SendKeys("#clientId", "userd-at-acme"), chromedp.SendKeys("#clientSecret", idpSecret),
		chromedp.SendKeys("#allowedDomains", "acme.example"))
	b.Submit(t, chromedp.Click("#create-provider"), http.StatusBadRequest)
	if msg := b.Text(t, "#slug-error"); !strings.Contains(msg, "The slug may hold lower-case letters") {
		t.Errorf("the slug's error reads %q", msg)
	}
	if got := b.Eval(t, `document.getElementById("clientSecret").value`); got != "" {
		t.Error("the refused form shows the secret typed")
	}
	b.CheckPage(t, "admin-identity-providers-error")
	b.Do(t, chromedp.SetValue("#slug", "acme"), chromedp.SendKeys("#clientSecret", idpSecret))
	b.Submit(t, chromedp.Click("#create-provider"), http.StatusOK)
	b.WantHeading(t, "Acme SSO")
	if got := b.Text(t, "#callback-url"); got != kit.PublicURL+"/auth/idp/acme/callback" {
		t.Errorf("the callback URL reads %q", got)
	}
	b.CheckPage(t, "admin-identity-provider")
	if p := e.storedIdp("acme"); p.ClientSecret != idpSecret || p.Issuer != "https://login.acme.example" {
		t.Errorf("the provider stored: %+v", p)
	}

	e.seedIdp("github", "GitHub", domain.IdentityProviderGitHub, true)
	b.Open(t, origin+"/admin/identity-providers", http.StatusOK)
	b.CheckPage(t, "admin-identity-providers")

	e.seedIdentity("root@example.com", "acme", "00u1a2b3c4", "root@acme.example")
	b.Open(t, origin+"/admin/users/"+string(root.ID), http.StatusOK)
	if got := b.Text(t, "#identities tbody"); !strings.Contains(got, "Acme SSO") || !strings.Contains(got, "root@acme.example") {
		t.Errorf("the user's identities read %q", got)
	}
	b.CheckPage(t, "admin-user-identities")

	b.Open(t, origin+"/account/identities", http.StatusOK)
	b.WantHeading(t, "Linked accounts")
	b.CheckPage(t, "account-identities")

	// Without a password, the one linked account is the way in: kept.
	e.dropPassword("root@example.com")
	b.Submit(t, chromedp.Click("#unlink-acme"), http.StatusConflict)
	if got := b.Text(t, "#error-summary"); !strings.Contains(got, "This is the only way to sign in to your account") {
		t.Errorf("the refusal reads %q", got)
	}
	b.CheckPage(t, "account-identities-error")
	b.CheckConsole(t)
}
