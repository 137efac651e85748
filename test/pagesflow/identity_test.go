package pagesflow

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
)

// TestSignInProviders_in_chromium: an admin registers a sign-in provider
// in the real binary's console, whose page gives the callback URL under
// USERD_PUBLIC_URL, and never its secret; the account page offers to
// link it. The pages themselves pass CheckPage in adapters/web
// (TestIdpPages_in_chromium).
func TestSignInProviders_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	s := startUserd(t)

	b.Open(t, s.origin+"/admin/identity-providers", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", adminEmail), chromedp.SendKeys("#password", adminPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Sign-in providers")
	const secret = "acme-Client-Secret-0123456789"
	b.Do(t, chromedp.SendKeys("#slug", "acme"), chromedp.SendKeys("#displayName", "Acme SSO"),
		chromedp.SendKeys("#issuer", "https://login.acme.example"), chromedp.SendKeys("#clientId", "userd-at-acme"),
		chromedp.SendKeys("#clientSecret", secret))
	b.Submit(t, chromedp.Click("#create-provider"), http.StatusOK)
	b.WantHeading(t, "Acme SSO")
	if got, want := b.Text(t, "#callback-url"), s.origin+"/auth/idp/acme/callback"; got != want {
		t.Errorf("the callback URL reads %q, want %q", got, want)
	}
	if strings.Contains(b.Eval(t, "document.documentElement.outerHTML"), secret) {
		t.Error("the provider's page shows its secret")
	}

	b.Open(t, s.origin+"/account/identities", http.StatusOK)
	b.WantHeading(t, "Linked accounts")
	if got := b.Text(t, "#link-acme"); got != "Link Acme SSO" {
		t.Errorf("the link button reads %q", got)
	}
	b.CheckConsole(t)
}
