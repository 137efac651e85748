package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/test/chromium"
)

// TestPages_in_chromium opens the links of delivered messages in a real
// headless Chromium, phone-sized, and goes through both pages as a person
// does: a click, then typing and Enter. No script of ours runs; the test
// reads the page through the DevTools protocol. Each page passes the
// kit's CheckPage (test/chromium): its stylesheet loads, the browser
// refuses nothing under its Content-Security-Policy, axe-core finds no
// violation of WCAG 2.1 A and AA on a desktop and on a phone, light and
// dark, nothing is wider than the phone, and its screenshots are those
// of docs/pages.md (rewritten with USERD_UPDATE_SCREENSHOTS=1). Skipped
// without Chromium or axe-core, except in CI.
func TestPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	srv := httptest.NewServer(httpapi.New(e.svc, httpapi.Options{Logger: e.log, Pages: e.pages}))
	defer srv.Close()
	b.SetViewport(t, chromium.Phone)

	// The verification link: the button, then the page that says it is done.
	verifyLink := e.register("ada@example.com")
	b.Open(t, srv.URL+verifyLink, http.StatusOK)
	b.WantHeading(t, "Verify your email address")
	b.CheckPage(t, "account-verify-email")
	b.Submit(t, chromedp.Click(chromedp.CSS(`button[type="submit"]`)), http.StatusOK)
	b.WantHeading(t, "Your email address is verified")
	b.CheckPage(t, "account-verify-email-done")
	if !e.user("ada@example.com").EmailVerified {
		t.Fatal("the browser's click did not verify the email")
	}

	// The reset link: the form, whose colors follow the reader's scheme.
	resetLink := e.requestReset("ada@example.com")
	b.Open(t, srv.URL+resetLink, http.StatusOK)
	b.WantHeading(t, "Choose a new password")
	b.SetColorScheme(t, chromium.Dark)
	if bg := b.Eval(t, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(18, 20, 23)" {
		t.Errorf("the dark scheme's background is %s", bg)
	}
	b.SetColorScheme(t, chromium.Light)
	b.CheckPage(t, "account-reset-password")
	b.WantFocusVisible(t, "#password")

	// A password the policy refuses comes back beside its field, typed
	// and sent with Enter, as from a keyboard.
	b.Do(t, chromedp.SendKeys(chromedp.ID("password"), "password"))
	b.Submit(t, chromedp.SendKeys(chromedp.ID("confirm"), "password\n"), http.StatusBadRequest)
	b.WantHeading(t, "Choose a new password")
	if msg := b.Text(t, "#password-error"); !strings.Contains(msg, "The new password is too common.") {
		t.Errorf("the field's error reads %q", msg)
	}
	if got := b.Eval(t, `document.getElementById("password").getAttribute("aria-describedby")`); got != "password-hint password-error" {
		t.Errorf("aria-describedby = %q", got)
	}
	b.CheckPage(t, "account-reset-password-error")

	// The link still works.
	b.Do(t, chromedp.SendKeys(chromedp.ID("password"), newPassword))
	b.Submit(t, chromedp.SendKeys(chromedp.ID("confirm"), newPassword+"\n"), http.StatusOK)
	b.WantHeading(t, "Your password is changed")
	b.CheckPage(t, "account-reset-password-done")
	if !e.canLogin("ada@example.com", newPassword) {
		t.Fatal("the password set in the browser does not sign in")
	}

	// A link that cannot be one: the page of every bad link, a 400.
	b.Open(t, srv.URL+web.VerifyEmailPath+"?token=garbled", http.StatusBadRequest)
	b.WantHeading(t, "This link is invalid or has expired")
	b.CheckPage(t, "account-link-invalid")
	b.CheckConsole(t)
}
