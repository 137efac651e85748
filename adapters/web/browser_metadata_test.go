package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
)

// TestMetadataPages_in_chromium: an admin edits a user's appMetadata on
// the user's page of the console, typing into its textarea; a value that
// is no JSON comes back beside the field, as typed; a good one saves and
// shows indented. The user then sees it, read-only, on the account page.
// Each page passes CheckPage (axe-core in the four looks, the screenshots
// of docs/console.md).
func TestMetadataPages_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	e.addUser(rootEmail, true)
	ada := e.addUser("ada@example.com", false)
	origin := pagesServer(t, e)

	b.Open(t, origin+"/admin/users/"+string(ada.ID), http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", rootEmail), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "ada@example.com")
	if got := b.Eval(t, `document.getElementById("appMetadata").value`); got != "{}" {
		t.Errorf("the appMetadata field holds %q, want {}", got)
	}

	// Not JSON: refused beside the field, what was typed kept.
	bad := `{"plan": pro}`
	b.Do(t, chromedp.Clear(chromedp.ID("appMetadata")), chromedp.SendKeys(chromedp.ID("appMetadata"), bad))
	b.Submit(t, chromedp.Click("#save"), http.StatusBadRequest)
	if msg := b.Text(t, "#appMetadata-error"); !strings.Contains(msg, "The app metadata must be a JSON object.") {
		t.Errorf("the field's error reads %q", msg)
	}
	if got := b.Eval(t, `document.getElementById("appMetadata").getAttribute("aria-describedby")`); got != "appMetadata-hint appMetadata-error" {
		t.Errorf("aria-describedby = %q", got)
	}
	if got := b.Eval(t, `document.getElementById("appMetadata").getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("aria-invalid = %q", got)
	}
	if got := b.Eval(t, `document.getElementById("appMetadata").value`); got != bad {
		t.Errorf("the field holds %q, want what was typed", got)
	}
	b.CheckPage(t, "admin-user-metadata-error")
	if !e.user("ada@example.com").AppMetadata.IsEmpty() {
		t.Fatal("the refused value was saved")
	}

	// A good value, typed over several lines: saved, shown indented.
	b.Do(t, chromedp.Clear(chromedp.ID("appMetadata")), chromedp.SendKeys(chromedp.ID("appMetadata"), "{\"plan\": \"pro\",\n\"roles\": [\"editor\"]}"))
	b.Submit(t, chromedp.Click("#save"), http.StatusOK)
	if got := b.Text(t, ".notice"); got != "The changes are saved." {
		t.Errorf("the notice reads %q", got)
	}
	want := "{\n  \"plan\": \"pro\",\n  \"roles\": [\n    \"editor\"\n  ]\n}"
	if got := b.Eval(t, `document.getElementById("appMetadata").value`); got != want {
		t.Errorf("the field holds %q after the save, want %q", got, want)
	}
	if got := e.user("ada@example.com").AppMetadata.String(); got != `{"plan":"pro","roles":["editor"]}` {
		t.Errorf("the stored appMetadata: %s", got)
	}
	b.CheckPage(t, "admin-user-metadata")

	// The user sees it on the account page, read-only.
	b.Submit(t, chromedp.Click(".signout button"), http.StatusOK)
	b.Open(t, origin+"/account/", http.StatusOK)
	b.Do(t, chromedp.SendKeys("#email", "ada@example.com"), chromedp.SendKeys("#password", custPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "My account")
	if got := b.Text(t, "#profile-app-metadata"); got != want {
		t.Errorf("the account page shows %q, want %q", got, want)
	}
	if n := b.Eval(t, `String(document.querySelectorAll("#appMetadata, textarea, [contenteditable]").length)`); n != "0" {
		t.Errorf("the account page has %s editable fields for the metadata", n)
	}
	b.CheckPage(t, "account-metadata")
	b.CheckConsole(t)
}
