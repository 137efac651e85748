package pagesflow

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/totpgen"
)

// TestAccountPage_in_chromium: a user signs in to the account page, turns
// on TOTP by reading the QR code (zbarimg decodes the PNG the page shows,
// and the test's own generator makes the code from its secret), gets the
// recovery codes, adds a passkey with Chromium's virtual authenticator,
// and signs out a session of another device; each page passes CheckPage,
// and the API shows what was done.
func TestAccountPage_in_chromium(t *testing.T) {
	t.Parallel()
	zbarimg := kit.Tool(t, "zbarimg", "zbar-tools", "the QR code is not read back")
	b := chromium.Start(t)
	s := startUserd(t)
	const email = "carol@example.com"
	s.register(t, "Carol", email)
	// Another device's session, to be signed out from the page.
	other := s.login(t, email, userPassword)

	b.Open(t, s.origin+"/account/", http.StatusOK)
	b.WantHeading(t, "Sign in")
	b.CheckPage(t, "account-sign-in")
	b.Do(t, chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", userPassword))
	b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
	b.WantHeading(t, "My account")
	b.CheckPage(t, "account")

	// TOTP, from the QR code.
	b.Open(t, s.origin+"/account/mfa", http.StatusOK)
	b.CheckPage(t, "account-mfa")
	b.Do(t, chromedp.SendKeys("#currentPassword", userPassword))
	b.Submit(t, chromedp.Click("#totp-set-up"), http.StatusOK)
	b.CheckPage(t, "account-totp")
	uri := readQR(t, zbarimg, b.Eval(t, `document.querySelector(".qr img").src`))
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" {
		t.Fatalf("the QR code reads %q, want an otpauth://totp/ URI", uri)
	}
	secret := u.Query().Get("secret")
	if shown := strings.ReplaceAll(b.Text(t, "#totp-secret"), " ", ""); shown != secret {
		t.Errorf("the key in text %q differs from the QR code's %q", shown, secret)
	}
	b.Do(t, chromedp.SendKeys("#code", totpgen.MustCode(t, secret, time.Now())))
	b.Submit(t, chromedp.Click("#totp-confirm"), http.StatusOK)
	codes := b.Text(t, "#recovery-codes")
	if n := len(strings.Fields(codes)); n != 10 {
		t.Errorf("%d recovery codes shown, want 10:\n%s", n, codes)
	}
	b.CheckPage(t, "account-recovery-codes")
	// A password alone no longer signs in.
	if r := s.api(t, http.MethodPost, "/auth/login", map[string]string{"email": email, "password": userPassword}, ""); r.Status != http.StatusUnauthorized ||
		!strings.Contains(string(r.Body), `"mfa_required"`) {
		t.Errorf("a password login after TOTP: %d %s, want 401 mfa_required", r.Status, r.Body)
	}

	// A passkey, from the virtual authenticator.
	b.AddVirtualAuthenticator(t)
	b.Open(t, s.origin+"/account/passkeys", http.StatusOK)
	b.CheckPage(t, "account-passkeys")
	b.Do(t, chromedp.SendKeys("#name", "Chromium"))
	// The page asks for the password before the ceremony (issue 24).
	b.Do(t, chromedp.SendKeys("#currentPassword", userPassword))
	b.Submit(t, chromedp.Click("#add-passkey"), http.StatusOK)
	if list := b.Text(t, "#passkeys"); !strings.Contains(list, "Chromium") {
		t.Errorf("the passkeys list after adding one: %q", list)
	}
	if offer := b.Text(t, "#offer-sign-out"); !strings.Contains(offer, "sign out your other sessions") {
		t.Errorf("no offer to sign out the other sessions after a new factor: %q", offer)
	}
	var passkeys []struct {
		Name string `json:"name"`
	}
	kit.Want(t, "the API's passkeys", s.api(t, http.MethodGet, "/api/users/me/passkeys", nil, other.AccessToken), http.StatusOK, &passkeys)
	if len(passkeys) != 1 || passkeys[0].Name != "Chromium" {
		t.Errorf("the account's passkeys: %+v, want the one added", passkeys)
	}

	// Sign the other device out.
	b.Open(t, s.origin+"/account/sessions", http.StatusOK)
	b.CheckPage(t, "account-sessions")
	sid := kit.ClaimsOf(t, other.AccessToken).SID
	b.Submit(t, chromedp.Click("#sign-out-"+sid), http.StatusOK)
	if r := s.api(t, http.MethodPost, "/auth/refresh-token", map[string]string{"refreshToken": other.RefreshToken}, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("the signed-out device's refresh: %d %s, want 401", r.Status, r.Body)
	}
	if r := s.api(t, http.MethodGet, "/api/users/me", nil, other.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("the signed-out device's access token: %d, want 401", r.Status)
	}
	// The page's own session lives on.
	b.Open(t, s.origin+"/account/", http.StatusOK)
	b.WantHeading(t, "My account")

	// Sign out, and back in with the passkey alone: the sign-in page's
	// passkey button (its script asks for a discoverable credential, the
	// authenticator answers, the form posts it).
	b.Submit(t, chromedp.Click(".signout button"), http.StatusOK)
	b.WantHeading(t, "Sign in")
	if notice := b.Text(t, ".notice"); notice != "You are signed out." {
		t.Errorf("the notice after signing out: %q", notice)
	}
	b.Submit(t, chromedp.Click("[data-passkey-login] [data-passkey-button]"), http.StatusOK)
	b.WantHeading(t, "My account")
	b.Open(t, s.origin+"/account/sessions", http.StatusOK)
	if sessions := b.Text(t, "#sessions"); !strings.Contains(sessions, "HeadlessChrome") {
		t.Errorf("the sessions after the passkey sign-in: %q", sessions)
	}
}

// readQR decodes the data: URL of a PNG with zbarimg and returns the text
// of its one QR code.
func readQR(t *testing.T, zbarimg, src string) string {
	t.Helper()
	const prefix = "data:image/png;base64,"
	if !strings.HasPrefix(src, prefix) {
		t.Fatalf("the QR code's src is not an inline PNG: %.60s", src)
	}
	png, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(src, prefix))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "qr.png")
	if err := os.WriteFile(path, png, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//nolint:gosec // G204: the test's own zbarimg, on the test's own file
	cmd := exec.CommandContext(ctx, zbarimg, "--raw", "-q", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr // where it says that it found no D-Bus, which does not matter
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("zbarimg: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
