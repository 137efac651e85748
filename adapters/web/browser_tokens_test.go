package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/chromium"
)

// TestTokenPages_in_chromium: a person makes a personal access token on
// the account page (a refusal first, at its fields), sees it once in a
// read-only field that the copy button's script copies, and revokes
// another through its confirm page; an admin sees the user's tokens on
// the user's page. Each page passes CheckPage (axe-core in the four
// looks, the screenshots of docs/console.md).
func TestTokenPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	root := e.addUser("root@example.com", true)
	seeded := e.seedTokens("root@example.com", 2)
	origin := pagesServer(t, e)

	b.Open(t, origin+"/account/tokens", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", "root@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "Access tokens")
	if got := b.Text(t, "#tokens"); !strings.Contains(got, "Seeded 1") || !strings.Contains(got, "udp_"+seeded[0].Prefix+"…") {
		t.Errorf("the list reads %q", got)
	}
	b.CheckPage(t, "account-tokens")

	// No name and no scope: refused beside their fields.
	b.Do(t, chromedp.Click("#scope-users-read"))
	b.Submit(t, chromedp.Click("#create-token"), http.StatusBadRequest)
	if msg := b.Text(t, "#name-error"); !strings.Contains(msg, "The name must not be empty.") {
		t.Errorf("the name's error reads %q", msg)
	}
	if msg := b.Text(t, "#scopes-error"); !strings.Contains(msg, "at least one box ticked") {
		t.Errorf("the scopes' error reads %q", msg)
	}
	b.CheckPage(t, "account-tokens-error")

	b.Do(t, chromedp.SendKeys("#name", "Nightly backup"), chromedp.Click("#scope-users-write"),
		chromedp.SetValue("#expiresInDays", "30"))
	b.Submit(t, chromedp.Click("#create-token"), http.StatusOK)
	token := b.Eval(t, `document.getElementById("token").value`)
	if !domain.WellFormedPersonalToken(token) {
		t.Fatalf("the token shown: %q", token)
	}
	if got := b.Eval(t, `location.pathname + location.search`); got != "/account/tokens" {
		t.Errorf("the page with the token is at %s", got)
	}
	// The script shows the copy button, which copies the token.
	b.Do(t, chromedp.WaitVisible("#copy-token"), chromedp.Click("#copy-token"))
	if got := b.WaitText(t, "#copy-status"); got != "Copied to the clipboard." {
		t.Errorf("the copy button says %q", got)
	}
	b.CheckPage(t, "account-token-created")
	// The token copied from the page works on the API, as its user.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, origin+"/api/users/me", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"root@example.com"`) {
		t.Errorf("GET /api/users/me with the token: %d %s", res.StatusCode, body)
	}

	b.Open(t, origin+"/admin/users/"+string(root.ID), http.StatusOK)
	if got := b.Text(t, "#tokens tbody"); !strings.Contains(got, "Nightly backup") || !strings.Contains(got, "users:write") ||
		strings.Contains(got, token) {
		t.Errorf("the user's tokens read %q", got)
	}
	b.CheckPage(t, "admin-user-tokens")

	// Revoked from the account page, through its confirm page.
	b.Open(t, origin+"/account/tokens", http.StatusOK)
	b.Submit(t, chromedp.Click("#revoke-"+string(seeded[1].ID)), http.StatusOK)
	b.WantHeading(t, "Revoke a token")
	b.Submit(t, chromedp.Click("#revoke-token"), http.StatusOK)
	if got := b.Text(t, ".notice"); got != "The token is revoked: it no longer works." {
		t.Errorf("the notice reads %q", got)
	}
	if n := len(e.tokensOf("root@example.com")); n != 2 {
		t.Errorf("%d live tokens after the revoke, want 2", n)
	}
	b.CheckConsole(t)
}
